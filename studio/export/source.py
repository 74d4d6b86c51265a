"""Python source for an exported flow package, built from checked pieces only.

Nothing from the flow file is spliced into code as code: names become identifiers only after
`identifier` accepted them, every other value is written as a literal by `literal`, and each
module is parsed again before it is written. The text is laid out the way `ruff format`
lays it out, so the package passes the project's own lint as written.
"""

from __future__ import annotations

import ast
import builtins
import json
import keyword
import math
import re
import sys
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from studio.types import PortType

RUN_OPTIONS = ("models", "db")
"""Keyword arguments of the generated `run()` besides the flow inputs."""
MODULE_NAMES = ("Any", "BaseModel", "ConfigDict", "NotRequired", "json")
"""Names a generated class body may read; a field may not shadow them."""
LINE_LENGTH = 120
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class NameProblem(ValueError):
    """A flow name that cannot become a Python identifier."""


def identifier(name: str, what: str) -> str:
    """`name` when it can be a field or keyword argument of the generated code; else NameProblem."""
    if not _NAME.match(name) or not name.isascii():
        raise NameProblem(f"{what} {name!r} is not a Python identifier (letters, digits, underscores)")
    if keyword.iskeyword(name):
        raise NameProblem(f"{what} {name!r} is a Python keyword")
    if name.startswith("_"):
        raise NameProblem(f"{what} {name!r} starts with an underscore (pydantic keeps those private)")
    if hasattr(BaseModel, name) or name.startswith("model_"):
        raise NameProblem(f"{what} {name!r} is the name of a pydantic model attribute")
    if name in MODULE_NAMES or name in ("str", "int", "float", "bool", "dict", "list"):
        raise NameProblem(f"{what} {name!r} would shadow a type the generated code uses")
    return name


def package_name(name: str, what: str = "package name") -> str:
    """A lowercase importable package name that shadows neither the stdlib nor flowstudio."""
    if not re.match(r"^[a-z_][a-z0-9_]{0,59}$", name) or keyword.iskeyword(name):
        raise NameProblem(
            f"{what} {name!r} must be a lowercase Python identifier (a-z, 0-9, _; at most 60) and not a keyword"
        )
    if name in sys.stdlib_module_names or name in ("studio", "nodes", "tests", "pydantic") or hasattr(builtins, name):
        raise NameProblem(f"{what} {name!r} would shadow a module it needs; choose another with --name")
    return name


def string(text: str) -> str:
    """A one-line string literal, quoted the way ruff format quotes it."""
    quote = "'" if text.count('"') > text.count("'") else '"'
    parts = []
    for char in text:
        if char == "\\" or char == quote:
            parts.append("\\" + char)
        elif char in "\n\r\t":
            parts.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[char])
        elif char.isprintable() and unicodedata.category(char) not in ("Zl", "Zp", "Cf"):
            parts.append(char)
        else:
            code = ord(char)
            parts.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    source = quote + "".join(parts) + quote
    if ast.literal_eval(source) != text:
        raise AssertionError(f"string literal does not round-trip: {source}")
    return source


def literal(value: Any) -> str:
    """A scalar (str, int, float, bool, None) as Python source."""
    if value is None or isinstance(value, bool | int):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f'float("{value}")'
    if isinstance(value, str):
        return string(value)
    raise TypeError(f"not a scalar: {type(value).__name__}")


def json_value(value: Any, indent: str) -> str:
    """Any JSON value: a scalar literal, or `json.loads(...)` in the layout ruff keeps."""
    if value is None or isinstance(value, bool | int | float | str):
        return literal(value)
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return f"json.loads(\n{indent}    {string(text)},\n{indent})"


def annotation(port: PortType) -> str:
    """The Python annotation of a port type."""
    if port.name == "any":
        return "Any"
    if port.name == "list":
        base = f"list[{annotation(port.item)}]" if port.item else "list[Any]"
    elif port.name == "dict":
        base = "dict[str, Any]"
    elif port.name == "messages":
        base = "list[dict[str, str]]"
    else:
        base = port.name
    return f"{base} | None" if port.optional else base


def data(value: Any) -> str:
    """Source for the small values `example` makes: scalars, and lists and mappings of them."""
    if isinstance(value, list):
        return "[" + ", ".join(data(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{string(str(k))}: {data(v)}" for k, v in value.items()) + "}"
    return literal(value)


def example(port: PortType) -> Any:
    """A value of the type, for the generated test and the README."""
    values: dict[str, Any] = {"str": "example", "int": 1, "float": 1.5, "bool": True, "dict": {}, "any": "example"}
    if port.name == "list":
        return [example(port.item or PortType("str"))]
    if port.name == "messages":
        return [{"role": "user", "content": "example"}]
    return values[port.name]


@dataclass
class InputField:
    name: str
    annotation: str
    description: str
    default: Any = None
    has_default: bool = False


@dataclass
class OutputField:
    name: str
    annotation: str
    description: str


@dataclass
class Package:
    """Everything the generated modules say, already checked."""

    flow_name: str
    package: str
    script: str
    flow_path: str
    """The flow file inside the package, relative to it, with `/`."""
    aliases: list[str]
    inputs: list[InputField]
    outputs: list[OutputField]
    examples: dict[str, Any]
    test_script: str
    skip_test: str | None = None
    waits_at: str | None = None
    """A human.input node: the run stops there, so the test expects status `waiting`."""
    version: str = "0"
    notes: list[str] = field(default_factory=list)


def _docstring_line(text: str, indent: str) -> list[str]:
    return [f"{indent}{string(text)}"] if text else []


def _field_lines(fields: list[InputField]) -> list[str]:
    lines = []
    for item in fields:
        if item.has_default:
            lines.append(f"    {item.name}: {item.annotation} = {json_value(item.default, '    ')}")
        else:
            lines.append(f"    {item.name}: {item.annotation}")
        lines += _docstring_line(item.description, "    ")
    return lines


def _typing_imports(package: Package, *extra: str) -> str:
    text = " ".join([f.annotation for f in package.inputs] + [f.annotation for f in package.outputs])
    names = {"Any"} & set(re.findall(r"\w+", text))
    if any(f.has_default for f in package.inputs):
        names.add("NotRequired")
    return "from typing import " + ", ".join(sorted(names | set(extra)))


def init_module(package: Package) -> str:
    """`<package>/__init__.py`: the typed API."""
    uses_json = any(f.has_default and isinstance(f.default, list | dict) for f in package.inputs)
    imports = ["import asyncio"] + (["import json"] if uses_json else []) + ["from pathlib import Path"]
    imports.append(_typing_imports(package, "TypedDict", "Unpack"))
    lines = [
        f'"""The `{package.flow_name}` flow as a typed Python API, exported by Flowstudio {package.version}.',
        "",
        "`run(**inputs)` runs the embedded flow on the Flowstudio engine and returns `Outputs`; `arun` is",
        "its async twin. Runs are recorded in memory unless `db=` names a SQLite file.",
        '"""',
        "",
        *imports,
        "",
        "from pydantic import BaseModel, ConfigDict",
        "from studio.export.runtime import Durability, FlowFailed, RunResult, outputs_of, run_embedded",
        "",
        "__all__ = [",
        *[
            f'    "{name}",'
            for name in (
                "FLOW_FILE",
                "MODEL_ALIASES",
                "FlowFailed",
                "InputValues",
                "Inputs",
                "Outputs",
                "RunResult",
                "arun",
                "arun_result",
                "run",
            )
        ],
        "]",
        "",
        *_flow_file(package.flow_path),
        '"""The embedded flow file."""',
        *_aliases(package.aliases),
        '"""Model aliases of the flow and its sub-flows; `models=` swaps them (ALIAS → model string)."""',
        "",
        "",
        "class Inputs(BaseModel):",
        f'    """Inputs of the `{package.flow_name}` flow."""',
        "",
        '    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)',
        *([""] if package.inputs else []),
        *_field_lines(package.inputs),
        "",
        "",
        "class InputValues(TypedDict):",
        '    """The keyword arguments of `run` and `arun`: the fields of `Inputs`."""',
        *([""] if package.inputs else []),
        *[
            f"    {f.name}: NotRequired[{f.annotation}]" if f.has_default else f"    {f.name}: {f.annotation}"
            for f in package.inputs
        ],
        "",
        "",
        "class Outputs(BaseModel):",
        f'    """Outputs of the `{package.flow_name}` flow."""',
        "",
        "    model_config = ConfigDict(use_attribute_docstrings=True)",
        *([""] if package.outputs else []),
    ]
    for item in package.outputs:
        lines.append(f"    {item.name}: {item.annotation}")
        lines += _docstring_line(item.description, "    ")
    lines += [
        "",
        "",
        "async def arun_result(",
        "    inputs: Inputs,",
        "    *,",
        "    models: dict[str, str] | None = None,",
        "    db: str | Path | None = None,",
        "    durability: Durability | None = None,",
        ") -> RunResult:",
        '    """Run the flow and return the whole run record (status, outputs, error, tokens, cost, steps).',
        "",
        "    A failed run is returned, not raised; inputs the flow refuses raise `studio.FlowError`.",
        '    """',
        "    values = inputs.model_dump(exclude_defaults=True)",
        "    return await run_embedded(FLOW_FILE, values, models=models, db=db, durability=durability)",
        "",
        "",
        "async def arun(",
        "    *,",
        "    models: dict[str, str] | None = None,",
        "    db: str | Path | None = None,",
        "    durability: Durability | None = None,",
        "    **inputs: Unpack[InputValues],",
        ") -> Outputs:",
        '    """Run the flow; raises `FlowFailed` when it fails or waits for input.',
        "",
        "    `models` swaps model aliases, like `flowstudio run --model`; `db` records the run in SQLite,",
        "    its steps written as `durability` says (`sync`, `async` or `exit`, like `flowstudio run --durability`).",
        '    """',
        "    result = await arun_result(Inputs.model_validate(inputs), models=models, db=db, durability=durability)",
        "    return Outputs.model_validate(outputs_of(result))",
        "",
        "",
        "def run(",
        "    *,",
        "    models: dict[str, str] | None = None,",
        "    db: str | Path | None = None,",
        "    durability: Durability | None = None,",
        "    **inputs: Unpack[InputValues],",
        ") -> Outputs:",
        '    """Run the flow and wait for it: the synchronous `arun`."""',
        "    return asyncio.run(arun(models=models, db=db, durability=durability, **inputs))",
    ]
    return _checked("\n".join(lines) + "\n")


def cli_module(package: Package) -> str:
    """`<package>/cli.py`: the console script."""
    return _checked(
        f'"""The `{package.script}` console script: run the embedded flow from a shell."""\n'
        "\n"
        "import sys\n"
        "from collections.abc import Sequence\n"
        "\n"
        "from studio.export.runtime import console\n"
        "\n"
        f"from {package.package} import FLOW_FILE, Inputs\n"
        "\n"
        "\n"
        "def main(argv: Sequence[str] | None = None) -> int:\n"
        f'    """`{package.script} --input NAME=VALUE ... [--model ALIAS=MODEL] [--db PATH] [--json]`,\n'
        f"    or `{package.script} serve [--port N] ...`: the flow as an HTTP service (`flowstudio serve`).\n"
        '    """\n'
        "    args = list(sys.argv[1:] if argv is None else argv)\n"
        '    if args[:1] == ["serve"]:\n'
        "        from studio.serve.console import console as serve\n"
        "\n"
        f'        return serve(FLOW_FILE, prog="{package.script} serve", argv=args[1:])\n'
        f'    return console(FLOW_FILE, Inputs, prog="{package.script}", argv=args)\n'
        "\n"
        "\n"
        "def run_script() -> None:\n"
        '    """The entry point: exit with the code `main` returns (1 failed, 2 bad input, 3 waiting)."""\n'
        "    sys.exit(main())\n"
    )


def main_module(package: Package) -> str:
    """`<package>/__main__.py`: `python -m <package>`."""
    return _checked(
        f'"""`python -m {package.package}`: the console script."""\n'
        "\n"
        f"from {package.package}.cli import run_script\n"
        "\n"
        "run_script()\n"
    )


def test_module(package: Package) -> str:
    """`tests/test_<package>.py`: runs the flow on the scripted model."""
    example_lines = [f"    {string(name)}: {data(value)}," for name, value in package.examples.items()]
    examples = ["INPUTS: InputValues = {", *example_lines, "}"] if example_lines else ["INPUTS: InputValues = {}"]
    skip = []
    if package.skip_test:
        skip = ["", "pytestmark = pytest.mark.skip(", f"    reason={string(package.skip_test)},", ")"]
    names = ["MODEL_ALIASES", "FlowFailed", "Inputs", "InputValues"] if package.waits_at else []
    names = names or ["MODEL_ALIASES", "Inputs", "InputValues", "Outputs", "arun", "arun_result", "run"]
    if package.waits_at:
        names += ["arun_result", "run"]
    lines = [
        f'"""The exported `{package.flow_name}` flow on Flowstudio\'s scripted model: no provider, no network."""',
        "",
        "import asyncio",
        "import json",
        "from pathlib import Path",
        "",
        "import pytest",
        "",
        *_import(package.package, names),
        f"from {package.package}.cli import main",
        "",
        f"SCRIPT = {string(package.test_script)}",
        '"""The scripted model every alias is swapped for (rules: `match` regex → `reply`)."""',
        *examples,
        '"""Inputs for the test run; edit them to exercise your flow."""',
        *skip,
        "",
        "",
        "@pytest.fixture",
        "def models(tmp_path: Path) -> dict[str, str]:",
        '    """Every model alias of the flow swapped for the scripted model."""',
        '    script = tmp_path / "script.yaml"',
        '    script.write_text(SCRIPT, encoding="utf-8")',
        '    return dict.fromkeys(MODEL_ALIASES, f"scripted/{script}")',
        "",
        "",
        "def as_text(value: object) -> str:",
        '    """How a shell user writes a value: text as it is, anything else as JSON."""',
        "    return value if isinstance(value, str) else json.dumps(value)",
        "",
        "",
        *(_waiting_tests(package.waits_at) if package.waits_at else _succeeding_tests()),
    ]
    return _checked("\n".join(lines) + "\n")


def _succeeding_tests() -> list[str]:
    return [
        "def test_run_returns_typed_outputs(models: dict[str, str]) -> None:",
        "    outputs = run(models=models, **INPUTS)",
        "    assert isinstance(outputs, Outputs)",
        "",
        "",
        "def test_arun_gives_the_same_outputs(models: dict[str, str]) -> None:",
        "    assert asyncio.run(arun(models=models, **INPUTS)) == run(models=models, **INPUTS)",
        "",
        "",
        "def test_run_is_recorded_in_sqlite_on_request(models: dict[str, str], tmp_path: Path) -> None:",
        '    db = tmp_path / "runs.db"',
        "    result = asyncio.run(arun_result(Inputs.model_validate(INPUTS), models=models, db=db))",
        '    assert result.status == "succeeded", result.error',
        "    assert db.is_file()",
        "",
        "",
        "def test_console_script_prints_the_run(models: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:",
        '    args = [f"--input={name}={as_text(value)}" for name, value in INPUTS.items()]',
        '    args += [f"--model={alias}={model}" for alias, model in models.items()]',
        '    assert main([*args, "--json"]) == 0',
        "    body = json.loads(capsys.readouterr().out)",
        '    assert body["status"] == "succeeded", body["error"]',
        '    Outputs.model_validate(body["outputs"])',
    ]


def _waiting_tests(node: str) -> list[str]:
    return [
        "def test_run_waits_for_human_input(models: dict[str, str]) -> None:",
        "    with pytest.raises(FlowFailed) as caught:",
        "        run(models=models, **INPUTS)",
        '    assert caught.value.status == "waiting"',
        f"    assert {string(node)} in str(caught.value)",
        "",
        "",
        "def test_waiting_run_is_kept_in_sqlite_for_resume(models: dict[str, str], tmp_path: Path) -> None:",
        '    db = tmp_path / "runs.db"',
        "    result = asyncio.run(arun_result(Inputs.model_validate(INPUTS), models=models, db=db))",
        '    assert result.status == "waiting", result.error',
        "    assert db.is_file()",
        "",
        "",
        "def test_console_script_exits_3_while_waiting(models: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:",
        '    args = [f"--input={name}={as_text(value)}" for name, value in INPUTS.items()]',
        '    args += [f"--model={alias}={model}" for alias, model in models.items()]',
        '    assert main([*args, "--json"]) == 3',
        '    assert json.loads(capsys.readouterr().out)["status"] == "waiting"',
    ]


def _import(module: str, names: list[str]) -> list[str]:
    line = f"from {module} import {', '.join(names)}"
    if width(line) <= LINE_LENGTH:
        return [line]
    return [f"from {module} import (", *[f"    {name}," for name in names], ")"]


def _aliases(aliases: list[str]) -> list[str]:
    items = [string(alias) for alias in aliases]
    inside = items[0] + "," if len(items) == 1 else ", ".join(items)
    line = f"MODEL_ALIASES: tuple[str, ...] = ({inside})"
    if width(line) <= LINE_LENGTH:
        return [line]
    return ["MODEL_ALIASES: tuple[str, ...] = (", *[f"    {item}," for item in items], ")"]


def _flow_file(path: str) -> list[str]:
    line = f"FLOW_FILE = Path(__file__).parent / {string(path)}"
    if width(line) <= LINE_LENGTH:
        return [line]
    return ["FLOW_FILE = Path(__file__).parent.joinpath(", f"    {string(path)},", ")"]


def width(line: str) -> int:
    """Columns a line takes, as ruff counts them (wide characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def _checked(source: str) -> str:
    """Parse the module again: a generator bug must never write a broken or spliced file."""
    ast.parse(source)
    return source
