"""`flowstudio export`: the package it writes is clean, installs in a fresh virtualenv and runs.

The fast tests check the generated code (ruff, mypy strict, no splicing), the embedded files
and the refusals. The slow one builds wheels of the engine and of every exported example,
installs them into one fresh virtualenv without the studio extra, and runs them there.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from studio.errors import InputError, SpecError
from studio.export import export_flow
from studio.export.source import identifier, string
from tests.conftest import CLI, FIXTURES, FLOWS, ROOT, SCRIPTS
from tests.test_examples import EXAMPLES, WAITING

BIN = Path(sys.executable).parent
EXPORTED = [*sorted(FLOWS.glob("*.yaml")), FIXTURES / "structural.yaml"]

ODD_FLOW = """\
flowstudio: 1
name: odd-text
description: "Quotes \\" ' and a backslash \\\\ ; a line\\nbreak; \\"\\"\\" ; {{ x }} ; 漢字 \\u2028"
inputs:
  text: {type: str, description: "He said \\"it's\\" \\\\n '''x''' \\"\\"\\"y\\"\\"\\" \\x1b \\u2028 \\t é"}
  count: {type: int, default: 3}
  maybe: {type: str, default: null}
  tags: {type: "list[str]", default: ["a", "b\\"c", "a long tag, long enough to push its line past the limit of one hundred and twenty"]}
  nums: {type: "list[int | null]"}
outputs:
  echoed: $up.text
  guarded: $quiet.text
  fixed: a literal
  loud: $call.loud
nodes:
  up: {type: text.template, inputs: {t: $inputs.text, n: $inputs.count}, config: {template: "{{ t }} x{{ n }}"}}
  quiet: {type: text.template, when: inputs.count > 5, inputs: {t: $inputs.text}, config: {template: "{{ t }}"}}
  call: {type: flow.call, inputs: {item: $up.text}, config: {flow: ../shared/leaf.yaml}}
"""
LEAF_FLOW = """\
flowstudio: 1
name: leaf
inputs: {item: {type: str}, suffix: {type: str, default: "!"}}
outputs: {loud: $up.text}
nodes:
  up: {type: text.template, inputs: {item: $inputs.item, suffix: $inputs.suffix}, config: {template: "{{ item | upper }}{{ suffix }}"}}
"""


@pytest.fixture(autouse=True)
def _no_root_left_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLOWSTUDIO_ROOT", raising=False)


def _odd_flow(tmp_path: Path) -> Path:
    """A flow whose texts try to break out of string literals, with a sub-flow up and across.

    The sub-flow is outside the top flow's folder, so the project root is `flows/` (as `--root`).
    """
    os.environ["FLOWSTUDIO_ROOT"] = str((tmp_path / "flows").resolve())
    (tmp_path / "flows" / "main").mkdir(parents=True)
    (tmp_path / "flows" / "shared").mkdir()
    (tmp_path / "flows" / "shared" / "leaf.yaml").write_text(LEAF_FLOW, encoding="utf-8")
    flow = tmp_path / "flows" / "main" / "odd.yaml"
    flow.write_text(ODD_FLOW, encoding="utf-8")
    return flow


def _run(args: list[str | Path], cwd: Path, env: dict[str, str] | None = None, timeout: float = 180) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.parametrize(
    "text",
    [
        "plain",
        "it's",
        'say "hi"',
        "both ' and \"",
        "\\",
        '"""',
        "'''",
        "a\nb\r\tc",
        "\x00\x1b\x7f",
        "漢字 é",
        "\u2028\u200b",
    ],
)
def test_string_literals_hold_any_text(text: str) -> None:
    source = string(text)
    assert ast.literal_eval(source) == text
    assert "\n" not in source and "\u2028" not in source


@pytest.mark.parametrize("name", ["class", "my-input", "_private", "model_dump", "json", "str", "Any", "ünï", "models"])
def test_names_that_cannot_be_fields_are_refused(name: str, tmp_path: Path) -> None:
    flow = tmp_path / "flow.yaml"
    flow.write_text(
        f"flowstudio: 1\nname: named\ninputs:\n  {json.dumps(name)}: {{type: str}}\n"
        "nodes:\n  a: {type: text.template, config: {template: x}}\n",
        encoding="utf-8",
    )
    with pytest.raises(SpecError) as refused:
        export_flow(flow, tmp_path / "out")
    assert str(refused.value).startswith(f"{flow}:4 at inputs.{name}: input {name!r}")
    assert not (tmp_path / "out").exists()


def test_soft_keywords_are_fine_as_names() -> None:
    assert identifier("match", "input") == "match"
    assert identifier("type", "input") == "type"


def test_an_invalid_flow_is_refused_with_its_validation_error(cli: CLI, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = cli("export", str(FIXTURES / "bad" / "cycle.yaml"), "--out", str(out))
    assert result.code == 2
    assert result.err == cli("validate", str(FIXTURES / "bad" / "cycle.yaml")).err
    assert "cycle" in result.err and not out.exists()


def test_bad_package_names_and_busy_directories_are_refused(cli: CLI, tmp_path: Path) -> None:
    flow = FLOWS / "headline.yaml"
    for name in ("os", "studio", "Bad-Name", "a;b", "x" * 61):
        with pytest.raises(InputError, match="at --name"):
            export_flow(flow, tmp_path / "never", name=name)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("keep me")
    refused = cli("export", str(flow), "--out", str(busy))
    assert refused.code == 2 and "not empty" in refused.err
    assert cli("export", str(flow), "--out", str(busy), "--force").code == 0
    assert (busy / "mine.txt").read_text() == "keep me" and (busy / "headline" / "__init__.py").is_file()


def test_sub_flows_are_embedded_with_their_relative_paths(tmp_path: Path) -> None:
    done = export_flow(FIXTURES / "structural.yaml", tmp_path / "out")
    flows = {p.as_posix() for p in done.flows}
    assert flows == {"structural/flows/structural.yaml", "structural/flows/sub/shout.yaml"}
    pyproject = tomllib.loads((tmp_path / "out" / "pyproject.toml").read_text())
    assert pyproject["tool"]["setuptools"]["package-data"]["structural"] == [
        "py.typed",
        "flows/structural.yaml",
        "flows/sub/shout.yaml",
    ]
    odd = export_flow(_odd_flow(tmp_path), tmp_path / "odd", name="odd")
    assert {p.as_posix() for p in odd.flows} == {"odd/flows/main/odd.yaml", "odd/flows/shared/leaf.yaml"}


def test_the_package_depends_on_the_engine_without_the_studio(tmp_path: Path) -> None:
    export_flow(FLOWS / "ticket-triage.yaml", tmp_path)
    project = tomllib.loads((tmp_path / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == ["flowstudio>=0.1.0"]
    assert project["optional-dependencies"]["local"] == ["flowstudio[local]>=0.1.0"]
    assert project["scripts"] == {"ticket-triage": "ticket_triage.cli:run_script"}
    assert "streamlit" not in (tmp_path / "pyproject.toml").read_text()


def test_lint_rules_in_the_package_are_the_projects(tmp_path: Path) -> None:
    export_flow(FLOWS / "headline.yaml", tmp_path)
    ours = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    theirs = tomllib.loads((tmp_path / "pyproject.toml").read_text())["tool"]
    assert theirs["ruff"]["line-length"] == ours["ruff"]["line-length"]
    assert theirs["ruff"]["lint"]["select"] == ours["ruff"]["lint"]["select"]
    assert theirs["ruff"]["lint"]["ignore"] == ours["ruff"]["lint"]["ignore"]
    assert theirs["mypy"]["strict"] is True and theirs["mypy"]["plugins"] == ours["mypy"]["plugins"]


def test_inputs_and_outputs_are_typed_from_the_flow(tmp_path: Path) -> None:
    export_flow(FLOWS / "ticket-triage.yaml", tmp_path / "triage")
    export_flow(FIXTURES / "structural.yaml", tmp_path / "structural")
    triage = (tmp_path / "triage" / "ticket_triage" / "__init__.py").read_text()
    assert '    ticket: str\n    "The customer\'s message"\n' in triage
    assert "    category: str\n" in triage
    assert "    reply: str | None\n" in triage  # `reply` has a `when`: skipped reads as null
    structural = (tmp_path / "structural" / "structural" / "__init__.py").read_text()
    for line in ("words: list[str]", "mapped: list[dict[str, Any]]", "called: str", "counted: str", "iterations: int"):
        assert f"    {line}\n" in structural


def test_generated_code_passes_ruff_and_mypy_strict(tmp_path: Path) -> None:
    outs = {
        "ticket-triage": FLOWS / "ticket-triage.yaml",
        "structural": FIXTURES / "structural.yaml",
        "odd": _odd_flow(tmp_path),
    }
    waiting = FLOWS / "approve-reply.yaml"
    if waiting.is_file():
        outs["approve-reply"] = waiting
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    for label, flow in outs.items():
        out = tmp_path / "out" / label
        export_flow(flow, out)
        _run([BIN / "ruff", "check", "--no-cache", "."], out)
        _run([BIN / "ruff", "format", "--check", "--no-cache", "."], out)
        _run([BIN / "mypy", "--cache-dir", tmp_path / "mypy-cache"], out, env)


def test_the_package_runs_and_passes_its_own_test_from_source(tmp_path: Path) -> None:
    done = export_flow(_odd_flow(tmp_path), tmp_path / "odd", name="odd")
    env = {**os.environ, "PYTHONPATH": str(done.out)}
    code = "from odd import run; print(run(text='hi', nums=[1, None]).model_dump_json())"
    outputs = json.loads(_run([sys.executable, "-c", code], tmp_path, env))
    assert outputs == {"echoed": "hi x3", "guarded": None, "fixed": "a literal", "loud": "HI X3!"}
    _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], done.out, env)


def test_a_misspelt_model_alias_is_refused_by_run_and_the_console_script(tmp_path: Path) -> None:
    done = export_flow(FLOWS / "ticket-triage.yaml", tmp_path / "triage")
    env = {**os.environ, "PYTHONPATH": str(done.out)}
    swap = f"scripted/{SCRIPTS / 'triage.yaml'}"
    code = (
        "import json, sys\n"
        "from ticket_triage import run\n"
        "from studio.errors import FlowError\n"
        "try:\n"
        "    run(ticket='refund me', models={'defualt': sys.argv[1]})\n"
        "except FlowError as err:\n"
        "    print(err.message)\n"
    )
    said = _run([sys.executable, "-c", code, swap], tmp_path, env)
    assert "the flow has no model alias 'defualt'; did you mean 'default'?" in said
    console = [sys.executable, "-m", "ticket_triage", "--input", "ticket=refund me", "--model", f"defualt={swap}"]
    refused = subprocess.run(console, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2, refused.stderr
    assert "--model defualt=...: the flow has no model alias 'defualt'; did you mean 'default'?" in refused.stderr
    assert refused.stdout == ""
    right = subprocess.run([*console[:-1], f"default={swap}"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert right.returncode == 0 and "category: billing" in right.stdout


def test_the_package_takes_a_durability_mode_in_run_the_console_script_and_serve(tmp_path: Path) -> None:
    from studio.store import open_store

    done = export_flow(FLOWS / "ticket-triage.yaml", tmp_path / "triage")
    env = {**os.environ, "PYTHONPATH": str(done.out)}
    swap = f"default=scripted/{SCRIPTS / 'triage.yaml'}"
    db = tmp_path / "runs.db"
    code = (
        "import sys\n"
        "from ticket_triage import run\n"
        "run(ticket='refund me', models={'default': sys.argv[1].split('=', 1)[1]}, db=sys.argv[2], durability='exit')\n"
    )
    _run([sys.executable, "-c", code, swap, db], tmp_path, env)
    console = [sys.executable, "-m", "ticket_triage", "--input", "ticket=refund me", "--model", swap, "--db", db]
    _run([*console, "--durability", "async"], tmp_path, env)
    store = open_store(db)
    try:
        modes = sorted(run.options["durability"] for run in store.query_runs())
    finally:
        store.close()
    assert modes == ["async", "exit"]
    refused = subprocess.run([*map(str, console), "--durability", "later"], env=env, capture_output=True, text=True)
    assert refused.returncode == 2 and "invalid choice: 'later'" in refused.stderr
    odd = export_flow(_odd_flow(tmp_path), tmp_path / "odd", name="odd")
    served_db = tmp_path / "served.db"
    serve = [sys.executable, "-m", "odd", "serve", "--port", "0", "--db", str(served_db), "--durability", "exit"]
    server = subprocess.Popen(serve, env={**env, "PYTHONPATH": str(odd.out)}, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().split(" at ", 1)[1].split()[0]
        answer = httpx.post(f"{url}/flows/odd-text/runs", json={"inputs": {"text": "hi", "nums": [1]}}, timeout=60)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert answer.status_code == 200 and answer.json()["outputs"]["loud"] == "HI X3!"
    store = open_store(served_db)
    try:
        assert store.get_run(answer.json()["run_id"]).options["durability"] == "exit"  # type: ignore[union-attr]
    finally:
        store.close()


def test_the_console_scripts_help_lists_serve(tmp_path: Path) -> None:
    done = export_flow(FLOWS / "ticket-triage.yaml", tmp_path / "triage")
    env = {**os.environ, "PYTHONPATH": str(done.out)}
    shown = _run([sys.executable, "-m", "ticket_triage", "--help"], tmp_path, env)
    assert "ticket-triage serve [--port N]" in shown and "--model ALIAS=MODEL" in shown


def test_the_install_line_installs_what_the_flow_needs_to_run(tmp_path: Path) -> None:
    from studio.export.engine_wheel import install_command, source_tree

    local = export_flow(FLOWS / "ticket-triage.yaml", tmp_path / "triage")
    assert local.extras == ["local"] and local.after_install == ["flowstudio models install smollm2"]
    readme = (local.out / "README.md").read_text()
    install = readme.split("## Install", 1)[1].split("## Python", 1)[0]
    assert "pip install --find-links wheels '.[local]'" in install and "flowstudio models install smollm2" in install
    wheel = local.out / "wheels" / "flowstudio-0.1.0-py3-none-any.whl"
    line = install_command(local.out, wheel, extras=local.extras, then=local.after_install)
    assert line == (
        f"pip install --find-links {local.out / 'wheels'} '{local.out}[local]' && flowstudio models install smollm2"
    )
    scripted = export_flow(FIXTURES / "structural.yaml", tmp_path / "structural")
    assert scripted.extras == [] and scripted.after_install == []
    assert "pip install --find-links wheels .   #" in (scripted.out / "README.md").read_text()
    # Without the engine's wheel, flowstudio comes from this checkout: no index has its version.
    no_wheel = install_command(scripted.out, None)
    assert no_wheel == f"pip install {source_tree()} {scripted.out}"


STRUCTURED_FLOW = """\
flowstudio: 1
name: person
inputs: {text: {type: str}}
outputs: {name: $extract.name, age: $extract.age}
models: {default: {model: local/smollm2}}
nodes:
  extract:
    type: llm.structured
    inputs: {text: $inputs.text}
    config: {prompt: "Who is this about? {{ text }}", fields: {name: str, age: "int | null"}}
"""


def test_a_test_script_replaces_the_default_replies(tmp_path: Path) -> None:
    flow = tmp_path / "person.yaml"
    flow.write_text(STRUCTURED_FLOW, encoding="utf-8")
    script = tmp_path / "script.yaml"
    script.write_text("""script:\n  - {reply: 'Ada", "age": 36}'}\n""", encoding="utf-8")
    skipped = export_flow(flow, tmp_path / "default")
    assert "pytestmark = pytest.mark.skip(" in (skipped.out / "tests" / "test_person.py").read_text()
    assert any("--test-script" in note for note in skipped.notes)
    done = export_flow(flow, tmp_path / "scripted", test_script=script)
    test = (done.out / "tests" / "test_person.py").read_text()
    assert "pytestmark" not in test and string(script.read_text()) in test
    assert "    age: int | None\n" in (done.out / "person" / "__init__.py").read_text()
    env = {**os.environ, "PYTHONPATH": str(done.out)}
    assert "4 passed" in _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], done.out, env)


# --- the slow path: wheels, a fresh virtualenv, the installed packages ---------------------------


@dataclass
class Installed:
    venv: Path
    packages: dict[str, Path] = field(default_factory=dict)
    """Flow file stem → exported directory."""
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def bin(self) -> Path:
        return self.venv / "bin"


def _engine_source(into: Path) -> Path:
    """The checkout's distribution files only, so building a wheel writes nothing into the tree."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("studio", "nodes"):
        shutil.copytree(ROOT / part, into / part, ignore=ignore)
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / part, into / part)
    return into


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("export")
    result = Installed(base / "venv")
    start = time.perf_counter()
    for flow in EXPORTED:
        result.packages[flow.stem] = export_flow(flow, base / "out" / flow.stem).out
    result.seconds["export"] = time.perf_counter() - start

    start = time.perf_counter()
    _run([sys.executable, "-m", "venv", "--without-pip", result.venv], base)
    pip: list[str | Path] = [
        sys.executable,
        "-m",
        "pip",
        "--disable-pip-version-check",
        "--python",
        result.bin / "python",
    ]
    _run([*pip, "install", "-q", "setuptools>=77", "pytest"], base, timeout=300)
    result.seconds["venv"] = time.perf_counter() - start

    start = time.perf_counter()
    wheels = base / "wheels"
    sources = [_engine_source(base / "engine"), *result.packages.values()]
    # One build environment for all: the venv's own setuptools, instead of one isolated env per wheel.
    _run([*pip, "wheel", "--no-build-isolation", "--no-deps", "-q", "-w", wheels, *sources], base, timeout=300)
    result.seconds["wheels"] = time.perf_counter() - start

    start = time.perf_counter()
    _run([*pip, "install", "--no-compile", "-q", *sorted(wheels.glob("*.whl"))], base, timeout=600)
    result.seconds["install"] = time.perf_counter() - start
    return result


def _in_venv(installed: Installed, code: str, payload: Any) -> Any:
    out = _run([installed.bin / "python", "-c", code, json.dumps(payload)], installed.venv)
    return json.loads(out)


RUN_EVERY_EXAMPLE = """\
import asyncio, importlib, json, sys, tempfile
from pathlib import Path
from studio.runtime.runner import resume_run_async

def value(model, name, text):  # as the console script reads --input: str inputs verbatim, others as JSON
    if model.model_fields[name].annotation is str:
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text

results = {}
for name, job in json.loads(sys.argv[1]).items():
    module = importlib.import_module(job["package"])
    inputs = module.Inputs.model_validate({k: value(module.Inputs, k, v) for k, v in job["inputs"].items()})
    db = Path(tempfile.mkdtemp()) / "runs.db"
    result = asyncio.run(module.arun_result(inputs, models=job["models"], db=db))
    first = result.status
    if job["answer"]:
        node, _, answer = job["answer"].partition("=")
        result = asyncio.run(resume_run_async(result.run_id, values={node: json.loads(answer)}, db=db))
    typed = module.Outputs.model_validate(result.outputs).model_dump() if result.status == "succeeded" else None
    results[name] = {"first": first, "status": result.status, "outputs": typed, "file": module.__file__}
print(json.dumps(results))
"""


@pytest.mark.slow
def test_installed_packages_run_the_examples(installed: Installed) -> None:
    jobs = {}
    for name, (inputs, _, script) in EXAMPLES.items():
        models = {"default": f"scripted/{SCRIPTS / script}.yaml"}
        answer = WAITING.get(name, "")
        jobs[name] = {"package": name.replace("-", "_"), "inputs": inputs, "models": models, "answer": answer}
    results = _in_venv(installed, RUN_EVERY_EXAMPLE, jobs)
    for name, (_, outputs, _) in EXAMPLES.items():
        assert results[name]["first"] == ("waiting" if name in WAITING else "succeeded"), results[name]
        assert results[name]["status"] == "succeeded", results[name]
        assert results[name]["outputs"] == outputs, name
        assert Path(results[name]["file"]).is_relative_to(installed.venv), "imported from the venv, not the tree"


@pytest.mark.slow
def test_installed_console_scripts_run(installed: Installed) -> None:
    inputs, outputs, script = EXAMPLES["ticket-triage"]
    args = [f"--input=ticket={inputs['ticket']}", f"--model=default=scripted/{SCRIPTS / script}.yaml", "--json"]
    body = json.loads(_run([installed.bin / "ticket-triage", *args], installed.venv))
    assert body["status"] == "succeeded" and body["outputs"] == outputs
    assert set(body) == {"run_id", "status", "outputs", "error", "tokens", "cost_usd", "steps"}
    loud = _run([installed.bin / "structural", "--input", 'words=["a", "b"]'], installed.venv)
    assert 'mapped: [{"loud": "A?"}, {"loud": "B?"}]' in loud and "iterations: 3" in loud
    refused = subprocess.run([installed.bin / "structural", "--input", "words=5"], capture_output=True, text=True)
    assert refused.returncode == 2 and "input words" in refused.stderr


@pytest.mark.slow
def test_installed_packages_pass_their_own_tests(installed: Installed) -> None:
    tests = [directory / "tests" for directory in installed.packages.values()]
    report = _run([installed.bin / "pytest", "-p", "no:cacheprovider", "-rs", *tests], installed.venv)
    for stem in installed.packages:
        assert f"test_{stem.replace('-', '_')}.py ..." in report, report
    assert "skipped" not in report.rsplit("\n", 2)[-2], report


@pytest.mark.slow
def test_the_virtualenv_has_the_engine_but_not_the_studio(installed: Installed) -> None:
    check = "import importlib.util as u; print(u.find_spec('studio') is not None, u.find_spec('streamlit') is None)"
    assert _run([installed.bin / "python", "-c", check], installed.venv).split() == ["True", "True"]
    seconds = ", ".join(f"{k} {v:.1f} s" for k, v in installed.seconds.items())
    print(f"export timings: {seconds}")
