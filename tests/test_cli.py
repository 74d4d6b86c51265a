"""The command-line contract scripts rely on (README, "Command line"), through real subprocesses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click
import jsonschema
import pytest

from tests.conftest import CLI, FIXTURES, FLOWS, ROOT, SCRIPTS

RUN_KEYS = {"run_id", "status", "outputs", "error", "tokens", "cost_usd", "steps"}
STEP_KEYS = {"node", "status", "attempt", "inputs", "outputs", "error", "tokens", "cost_usd", "started_at", "ended_at", "cached", "reused"}  # fmt: skip
CHAIN = str(FIXTURES / "chain.yaml")


def test_validate_prints_a_short_ok(cli: CLI) -> None:
    result = cli("validate", CHAIN)
    assert result.code == 0
    assert result.out.startswith("OK ") and len(result.out.splitlines()) == 1


def test_run_json_contract_then_runs_and_trace(cli: CLI) -> None:
    result = cli("run", CHAIN, "-i", "topic=rain", "--json")
    assert result.code == 0, result.err
    body = result.json()
    assert set(body) == RUN_KEYS
    assert body["status"] == "succeeded" and body["error"] is None
    assert body["outputs"] == {"headline": "SUNNY DAYS AHEAD!", "draft": "sunny days ahead"}
    assert body["tokens"] == 6 + 3
    assert body["cost_usd"] == pytest.approx(6e-6 + 3 * 2e-6)
    assert [s["node"] for s in body["steps"]] == ["ask", "write", "shout"]

    (listed,) = cli("runs", "--json").json()
    assert listed["run_id"] == body["run_id"]
    assert set(listed) == {"run_id", "flow", "status", "started_at", "ended_at", "tokens", "cost_usd", "version"}
    assert listed["flow"] == "chain" and listed["tokens"] == 9

    steps = cli("trace", body["run_id"], "--json").json()
    assert [set(s) for s in steps] == [STEP_KEYS] * 3
    write = steps[1]
    assert write["inputs"] == {"request": "Write a cheerful headline about rain."}
    assert write["outputs"] == {"text": "sunny days ahead"}
    assert write["tokens"] == 9 and write["cached"] is False and write["reused"] is False


def test_values_parse_as_json_when_they_can(cli: CLI, tmp_path: Path) -> None:
    flow = tmp_path / "typed.yaml"
    flow.write_text(
        "flowstudio: 1\nname: typed\ninputs: {n: {type: int}, tags: {type: 'list[str]'}, s: {type: str}}\n"
        "outputs: {n: $inputs.n, tags: $inputs.tags, s: $inputs.s}\n"
        "nodes:\n  a: {type: text.template, config: {template: x}}\n"
    )
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"s": "from file", "n": 1}))
    result = cli("run", str(flow), "--inputs", str(inputs), "-i", "n=5", "-i", 'tags=["a","b"]', "--json")
    assert result.json()["outputs"] == {"n": 5, "tags": ["a", "b"], "s": "from file"}


def test_model_alias_swap(cli: CLI) -> None:
    script = SCRIPTS / "triage.yaml"
    result = cli(
        "run",
        str(FLOWS / "ticket-triage.yaml"),
        "-i",
        "ticket=refund me",
        "--model",
        f"default=scripted/{script}",
        "--json",
    )
    assert result.code == 0, result.err
    assert result.json()["outputs"] == {"category": "billing", "reply": "Sorry about that, we will refund you today."}


def test_failed_run_exits_1_and_is_recorded(cli: CLI, tmp_path: Path) -> None:
    flow = tmp_path / "escape.yaml"
    flow.write_text(
        "flowstudio: 1\nname: escape\nnodes:\n  a: {type: text.template, config: {template: \"{{ ''.__class__.__mro__ }}\"}}\n"
    )
    result = cli("run", str(flow), "--json")
    assert result.code == 1
    body = result.json()
    assert body["status"] == "failed" and "sandbox" in body["error"]
    (step,) = cli("trace", body["run_id"], "--json").json()
    assert step["status"] == "failed" and "sandbox" in step["error"]
    assert cli("runs", "--json").json()[0]["status"] == "failed"


def test_trace_of_unknown_run_is_bad_input(cli: CLI) -> None:
    result = cli("trace", "nope")
    assert result.code == 2 and "no run 'nope'" in result.err


def test_schema_validates_every_example_flow(cli: CLI) -> None:
    schema = cli("schema").json()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    from studio.flow.loader import load_file

    flows = [*sorted(FLOWS.glob("*.yaml")), FIXTURES / "chain.yaml"]
    assert len(flows) >= 4
    for flow in flows:
        errors = list(validator.iter_errors(load_file(flow).data))
        assert errors == [], (flow, errors[:1])
    assert "llm.generate" in schema["$defs"]["NodeSpec"]["properties"]["type"]["examples"]


def test_fmt_is_idempotent_and_keeps_comments(cli: CLI, tmp_path: Path) -> None:
    messy = tmp_path / "messy.yaml"
    shutil.copy(FIXTURES / "messy.yaml", messy)
    assert cli("fmt", "--check", str(messy)).code == 1
    assert cli("fmt", str(messy)).code == 0
    once = messy.read_text()
    assert cli("fmt", str(messy)).code == 0
    assert messy.read_text() == once
    assert "# keep this comment" in once and "# and this one" in once
    assert once.index("flowstudio:") < once.index("name:") < once.index("nodes:")
    assert once.index("type: llm.generate") < once.index("inputs: {x") < once.index("config: {prompt")
    assert cli("validate", str(messy)).code == 0


def test_example_flows_are_already_formatted(cli: CLI) -> None:
    result = cli("fmt", "--check", *[str(p) for p in sorted(FLOWS.glob("*.yaml"))])
    assert result.code == 0, result.err


def test_help_of_every_command_has_an_example_and_is_in_the_readme(cli: CLI) -> None:
    from studio.cli import COMMANDS, main

    readme = (ROOT / "README.md").read_text()
    names = main.list_commands(click.Context(main))
    assert names == sorted(COMMANDS) and len(names) > 20
    for name in names:
        command = main.get_command(click.Context(main), name)
        assert command is not None and command.name == name, name
        assert f"flowstudio {name}" in readme, name
        assert command.help, name
        if not hasattr(command, "commands"):
            assert "Example:" in command.help, name
    assert cli("--help").code == 0
