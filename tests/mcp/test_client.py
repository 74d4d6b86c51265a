"""MCP client: agents and `tool.mcp` against a real MCP server over streamable HTTP and stdio."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from studio.errors import CompileError
from tests.mcp.conftest import SERVER
from tests.nodes.runner import run_flow

pytestmark = pytest.mark.slow  # every test here talks to a real MCP server (a subprocess)

STDIO_SERVER = f"{{command: {json.dumps(sys.executable)}, args: [{json.dumps(str(SERVER))}, stdio]}}"

TEXT_AGENT = """
inputs: {q: {type: str}}
outputs: {answer: $agent.answer, turns: $agent.turns}
models:
  default:
    model: scripted
    script:
      - {match: "Observation: 5\\\\n$", reply: "Answer: five"}
      - {match: "Question: ", reply: "Action: add\\nInput: {\\"a\\": 2, \\"b\\": 3}"}
nodes:
  agent:
    type: llm.agent
    inputs: {task: $inputs.q}
    config: {protocol: text, mcp: [SERVER]}
"""


async def test_agent_text_protocol_over_http(http_server: str) -> None:
    flow = TEXT_AGENT.replace("SERVER", f"{{url: {http_server}, tools: [add, echo]}}")
    result, store = await run_flow(flow, {"q": "2 plus 3?"})
    assert result.status == "succeeded", result.error
    assert result.outputs is not None and result.outputs["answer"] == "five"
    first = result.outputs["turns"][0]
    assert (first["tool"], first["input"], first["observation"]) == ("add", '{"a": 2, "b": 3}', "5")
    assert first["server"] == http_server and 0 < first["latency_s"] < 10
    prompt = store.calls(result.run_id)[0].request["prompt"]
    assert "- add(a: int, b: int): Add two integers." in prompt and "- echo(text: str)" in prompt
    assert "pid" not in prompt  # the allowlist keeps the other tools away from the model


FUNCTIONS_AGENT = """
inputs: {q: {type: str}}
outputs: {answer: $agent.answer, turns: $agent.turns}
models:
  default:
    model: scripted
    script:
      - {match: "returned: 42", reply: "It is 42."}
      - {tool_calls: [{name: m_add, arguments: {a: 2, b: 40}}]}
nodes:
  agent:
    type: llm.agent
    inputs: {task: $inputs.q}
    config: {mcp: [SERVER]}
"""


async def test_agent_function_calling_over_stdio_with_prefix_and_allowlist(allow_stdio: str) -> None:
    server = STDIO_SERVER[:-1] + ", prefix: m_, tools: [add]}"
    result, store = await run_flow(FUNCTIONS_AGENT.replace("SERVER", server), {"q": "2 + 40?"})
    assert result.status == "succeeded", result.error
    assert result.outputs is not None and result.outputs["answer"] == "It is 42."
    turn = result.outputs["turns"][0]
    assert (turn["tool"], turn["input"], turn["observation"]) == ("m_add", {"a": 2, "b": 40}, "42")
    offered = store.calls(result.run_id)[0].request["extra"]["tools"]
    assert [t["function"]["name"] for t in offered] == ["m_add"]
    assert offered[0]["function"]["parameters"]["required"] == ["a", "b"]


async def test_a_tool_error_is_an_observation_the_agent_sees(http_server: str) -> None:
    text = FUNCTIONS_AGENT.replace("SERVER", f"{{url: {http_server}}}")
    text = text.replace('"returned: 42"', '"boom"').replace(
        "name: m_add, arguments: {a: 2, b: 40}", "name: fail, arguments: {reason: boom}"
    )
    result, _ = await run_flow(text, {"q": "fail please"})
    assert result.status == "succeeded", result.error
    assert result.outputs is not None
    assert (
        "Error executing tool fail" in result.outputs["turns"][0]["error"]
        and result.outputs["turns"][0]["server"] == http_server
    )


CALLS = """
outputs: {sum: $first.result, again: $second.result, text: $first.text, listings: $count.result}
nodes:
  first:
    type: tool.mcp
    inputs: {a: 2, b: 3}
    config: {server: SERVER, tool: add, arguments: {a: int, b: int}}
  second:
    type: tool.mcp
    inputs: {text: $first.text}
    config: {server: SERVER, tool: echo, arguments: {text: str}}
  count:
    type: tool.mcp
    after: [second]
    config: {server: SERVER, tool: LAST}
"""


async def test_tool_mcp_typed_arguments_one_session_and_one_listing_per_run(http_server: str) -> None:
    flow = CALLS.replace("SERVER", f"{{url: {http_server}}}").replace("LAST", "listings")
    first, _ = await run_flow(flow)
    second, _ = await run_flow(flow)
    assert first.status == "succeeded", first.error
    assert first.outputs is not None and second.outputs is not None
    assert first.outputs["sum"] == {"result": 5} and first.outputs["text"] == "5"
    assert first.outputs["again"] == {"result": "5"}
    assert second.outputs["listings"]["result"] - first.outputs["listings"]["result"] == 1


async def test_one_stdio_process_per_run(allow_stdio: str) -> None:
    flow = CALLS.replace("SERVER", STDIO_SERVER).replace("LAST", "pid")
    first, _ = await run_flow(flow)
    second, _ = await run_flow(flow)
    assert first.outputs is not None and second.outputs is not None, (first.error, second.error)
    assert first.outputs["listings"]["result"] != second.outputs["listings"]["result"]  # a new process per run
    assert first.outputs["sum"] == {"result": 5}


async def test_a_wrong_argument_type_is_refused_when_compiling(http_server: str) -> None:
    flow = CALLS.replace("SERVER", f"{{url: {http_server}}}").replace("inputs: {a: 2, b: 3}", "inputs: {a: two, b: 3}")
    with pytest.raises(CompileError, match="type mismatch"):
        await run_flow(flow)


async def test_env_secrets_reach_the_server_and_are_masked_in_what_comes_back(
    allow_stdio: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FS_TEST_TOKEN", "s3cr3t-value-123")
    server = STDIO_SERVER[:-1] + ", env: {API_TOKEN: $env.FS_TEST_TOKEN}}"
    flow = f"""
outputs: {{value: $read.text}}
nodes:
  read:
    type: tool.mcp
    inputs: {{name: API_TOKEN}}
    config: {{server: {server}, tool: env}}
"""
    result, store = await run_flow(flow)
    assert result.status == "succeeded", result.error
    assert result.outputs == {"value": "***"}
    assert "s3cr3t" not in json.dumps([s.outputs for s in store.steps(result.run_id)])


async def test_a_header_from_the_environment_reaches_the_server_and_comes_back_masked(
    http_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FS_TEST_BEARER", "Bearer tok-987654")
    flow = f"""
outputs: {{value: $read.text}}
nodes:
  read:
    type: tool.mcp
    inputs: {{name: Authorization}}
    config: {{server: {{url: {http_server}, headers: {{Authorization: $env.FS_TEST_BEARER}}}}, tool: header}}
"""
    result, store = await run_flow(flow)
    assert result.status == "succeeded", result.error
    assert result.outputs == {"value": "***"}  # the server saw the real value; the run keeps none of it
    assert "tok-987654" not in json.dumps([s.outputs for s in store.steps(result.run_id)])


def test_a_literal_credential_header_is_refused() -> None:
    from studio.flow.spec import load_flow_text
    from studio.runtime.compiler import compile_flow
    from tests.nodes.runner import HEADER

    flow = CALLS.replace("SERVER", "{url: 'http://127.0.0.1:1/mcp', headers: {Authorization: Bearer abc}}")
    with pytest.raises(CompileError, match=r"credentials are only allowed as \$env.NAME"):
        compile_flow(load_flow_text(HEADER + flow.replace("LAST", "pid")))


async def test_an_unreachable_server_fails_the_node_with_its_address() -> None:
    flow = CALLS.replace("SERVER", "{url: 'http://127.0.0.1:9/mcp', timeout_s: 5}").replace("LAST", "pid")
    result, _ = await run_flow(flow)
    assert result.status == "failed"
    assert "127.0.0.1:9" in str(result.error)


CANARY_FLOW = """
outputs: {pid: $call.result}
nodes:
  call:
    type: tool.mcp
    config: {server: {command: COMMAND, args: [ARGS, stdio], env: {CANARY: CANARY_PATH}}, tool: pid}
"""


def _canary_flow(tmp_path: Path) -> tuple[Path, Path]:
    canary = tmp_path / "canary.txt"
    flow = tmp_path / "canary.yaml"
    text = CANARY_FLOW.replace("COMMAND", json.dumps(sys.executable)).replace("ARGS", json.dumps(str(SERVER)))
    flow.write_text("flowstudio: 1\nname: canary\n" + text.replace("CANARY_PATH", json.dumps(str(canary))))
    return flow, canary


def test_a_stdio_command_not_allowlisted_never_starts(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    flow, canary = _canary_flow(tmp_path)
    env = {"FLOWSTUDIO_MCP_COMMANDS": "", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    for command in (
        ("validate", str(flow)),
        ("run", str(flow), "--json"),
        ("export", str(flow), "--out", str(tmp_path / "pkg")),
    ):
        result = cli(*command, env=env)
        assert result.code == 2, (command, result.err)
        assert "not allowlisted" in result.err and "FLOWSTUDIO_MCP_COMMANDS" in result.err, result.err
        assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err
    assert not canary.exists()


def test_an_allowlisted_command_starts_only_when_a_run_reaches_it(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    flow, canary = _canary_flow(tmp_path)
    config = tmp_path / "config" / "flowstudio"
    config.mkdir(parents=True)
    (config / "mcp.toml").write_text(f"commands = [{json.dumps(sys.executable)}]\n")
    env = {"FLOWSTUDIO_MCP_COMMANDS": "", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    assert cli("validate", str(flow), env=env).code == 0
    assert cli("export", str(flow), "--out", str(tmp_path / "pkg"), env=env).code == 0
    assert not canary.exists()
    result = cli("run", str(flow), "--json", env=env)
    assert result.code == 0, result.err
    assert canary.exists() and result.json()["outputs"]["pid"] == {"result": int(canary.read_text())}
