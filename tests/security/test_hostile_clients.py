"""Hostile clients against the real servers: `flowstudio serve` and `flowstudio mcp serve --transport
http` on 127.0.0.1 (a free port, stopped by PID), and the spans a trace exporter sends."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from studio.cli import main
from studio.flow.spec import load_flow
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine
from studio.store import MemoryStore
from studio.telemetry.hook import OtelHook
from tests.conftest import FLOWSTUDIO
from tests.mcp.conftest import free_port, stop, wait_for_port
from tests.security.conftest import SECRET
from tests.serve.conftest import SERVE_FLOWS, Server, serve_command

pytestmark = pytest.mark.slow  # each module starts servers
TOKEN_ENV = "FLOWSTUDIO_TEST_TOKEN"
TOKEN = "s3cret-token-for-tests"
RUN = "/flows/steps/runs"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    """A server on a copy of tests/serve/flows with a script in the folder and a secret beside it,
    allowing `scripted/*` overrides and one extra host name."""
    base = tmp_path_factory.mktemp("hostile")
    flows = base / "flows"
    shutil.copytree(SERVE_FLOWS, flows)
    (flows / "inside.yaml").write_text("script:\n  - {reply: from the folder}\n")
    (base / "outside.yaml").write_text(f"script:\n  - {{reply: {SECRET}}}\n")
    (flows / "broken.yaml").write_text(
        "flowstudio: 1\nname: broken\noutputs: {text: $g.text}\n"
        "models: {default: {model: scripted/missing.yaml}}\n"
        "nodes:\n  g: {type: llm.generate, config: {prompt: hi}}\n"
    )
    command = serve_command(flows, base / "runs.db", "--allow-model", "scripted/*", "--allow-host", "flows.internal")
    server = Server(command).start()
    yield server, base
    server.stop()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server that needs a bearer token."""
    base = tmp_path_factory.mktemp("guarded")
    server = Server(serve_command(SERVE_FLOWS, base / "runs.db", "--token-env", TOKEN_ENV), env={TOKEN_ENV: TOKEN})
    yield server.start()
    server.stop()


def _port(server: Server) -> int:
    return int(server.url.rsplit(":", 1)[1])


def test_a_client_cannot_read_files_through_a_model_override(served: tuple[Server, Path]) -> None:
    server, base = served
    folder = str(base / "flows")
    with server.client() as client:
        for model in (
            f"scripted/{base / 'outside.yaml'}",
            "scripted/../outside.yaml",
            "scripted//etc/passwd",
            "scripted/../missing.yaml",
        ):
            answer = client.post(RUN, json={"inputs": {"topic": "x"}, "models": {"default": model}})
            assert answer.status_code == 422, (model, answer.text)
            assert answer.json()["detail"][0]["loc"] == ["body", "models", "default"]
            assert SECRET not in answer.text and folder not in answer.text and "root:" not in answer.text
        not_allowed = client.post(RUN, json={"inputs": {"topic": "x"}, "models": {"default": "openai/gpt-4o"}})
        assert not_allowed.status_code == 422 and "not allowed" in not_allowed.text
        inside = client.post(RUN, json={"inputs": {"topic": "x"}, "models": {"default": "scripted/inside.yaml"}})
        assert inside.status_code == 200 and inside.json()["outputs"]["final"] == "from the folder"


def test_errors_name_files_relative_to_the_served_folder(served: tuple[Server, Path]) -> None:
    server, base = served
    with server.client() as client:
        answer = client.post("/flows/broken/runs", json={})
    assert answer.status_code in (200, 422) and "missing.yaml" in answer.text, answer.text
    assert str(base) not in answer.text


def test_a_misspelt_alias_is_422_with_did_you_mean(served: tuple[Server, Path]) -> None:
    server, _ = served
    with server.client() as client:
        answer = client.post(RUN, json={"inputs": {"topic": "x"}, "models": {"defualt": "scripted"}})
    assert answer.status_code == 422
    problem = answer.json()["detail"][0]
    assert problem["loc"] == ["body", "models", "defualt"] and "did you mean 'default'" in problem["msg"]


def test_a_flow_file_cannot_name_a_script_outside_its_folder(tmp_path: Path) -> None:
    (tmp_path / "outside.yaml").write_text(f"script:\n  - {{reply: {SECRET}}}\n")
    folder = tmp_path / "project"
    folder.mkdir()
    flow = folder / "flow.yaml"
    flow.write_text(
        "flowstudio: 1\nname: leak\noutputs: {text: $g.text}\n"
        "models: {default: {model: scripted/../outside.yaml}}\n"
        "nodes:\n  g: {type: llm.generate, config: {prompt: hi}}\n"
    )
    result = CliRunner().invoke(main, ["run", str(flow), "--json"])
    assert result.exit_code != 0 and SECRET not in result.output
    assert "outside the project root" in result.output, result.output


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "evil.example"},
        {"Host": "evil.example:PORT"},
        {"Host": "localhost:1"},
        {"Host": "localhost:PORT", "Origin": "http://evil.example:PORT"},
        {"Host": "127.0.0.1:PORT", "Origin": "null"},
    ],
)
def test_a_foreign_host_or_origin_is_refused(served: tuple[Server, Path], headers: dict[str, str]) -> None:
    server, _ = served
    sent = {k: v.replace("PORT", str(_port(server))) for k, v in headers.items()}
    with server.client() as client:
        for path in ("/flows", "/healthz", "/docs"):
            answer = client.get(path, headers=sent)
            assert answer.status_code == 403, (path, answer.text)
            assert "not allowed" in answer.json()["detail"] or "not a name" in answer.json()["detail"]
        started = client.post(RUN, json={"inputs": {"topic": "x"}}, headers=sent)
        assert started.status_code == 403


def test_the_servers_own_names_and_allowed_hosts_pass(served: tuple[Server, Path]) -> None:
    server, _ = served
    port = _port(server)
    with server.client() as client:
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "flows.internal", f"flows.internal:{port}"):
            assert client.get("/flows", headers={"Host": host}).status_code == 200, host
        same_origin = {"Origin": f"http://localhost:{port}"}
        assert client.get("/flows", headers=same_origin).status_code == 200


def test_bodies_over_the_limit_are_413_without_being_read_whole(served: tuple[Server, Path]) -> None:
    server, _ = served
    assert server.process is not None
    before = _rss_kib(server.process.pid)
    big = b'{"inputs": {"topic": "' + b"x" * 2_000_000 + b'"}}'
    with server.client() as client:
        declared = client.post(RUN, content=big, headers={"Content-Type": "application/json"})
        assert declared.status_code == 413 and "1000000 bytes" in declared.json()["detail"]

        def endless() -> Iterator[bytes]:
            yield b'{"inputs": {"topic": "'
            for _ in range(1600):  # 100 MiB, unless the server stops reading
                yield b"x" * 65536

        try:
            streamed = client.post(RUN, content=endless(), headers={"Content-Type": "application/json"})
            assert streamed.status_code == 413 and "1000000 bytes" in streamed.text
        except httpx.TransportError:
            pass  # the server answered 413 and closed while the body was still being sent
        assert client.get("/healthz").status_code == 200
    assert _rss_kib(server.process.pid) - before < 60_000


def test_inputs_are_checked_strictly_against_the_published_schema(served: tuple[Server, Path]) -> None:
    server, _ = served
    with server.client() as client:
        schema = next(f for f in client.get("/flows").json() if f["name"] == "steps")["inputs"]
        assert schema["properties"]["count"]["type"] == "integer"
        for count in ("5", True, 2.5, None):
            answer = client.post(RUN, json={"inputs": {"topic": "x", "count": count}})
            assert answer.status_code == 422, (count, answer.text)
            problem = answer.json()["detail"][0]
            assert problem["loc"] == ["body", "inputs", "count"] and "integer" in problem["msg"]
        tags = client.post(RUN, json={"inputs": {"topic": "x", "tags": ["a", 1]}})
        assert tags.status_code == 422 and tags.json()["detail"][0]["loc"] == ["body", "inputs", "tags", "1"]
        assert client.post(RUN, json={"inputs": {"topic": "x", "count": 1}}).status_code == 200


def test_docs_work_offline_and_need_the_token(guarded: Server) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with guarded.client() as client:
        assert client.get("/docs").status_code == 401
        page = client.get("/docs", headers=auth)
        assert page.status_code == 200 and "/flows/{name}/runs" in page.text and "POST" in page.text.upper()
        assert "<script" not in page.text and "cdn" not in page.text.lower() and "https://" not in page.text
        assert client.get("/redoc", headers=auth).status_code == 404
        refused = client.get("/v1/models")
        assert refused.status_code == 401
        error = refused.json()["error"]
        assert set(error) == {"message", "type", "code"} and "token" in error["message"]
        assert client.get("/flows").json() == {"detail": "missing or wrong bearer token"}


def test_the_studio_refuses_a_public_address() -> None:
    result = CliRunner().invoke(main, ["studio", ".", "--address", "0.0.0.0", "--port", "1"])
    assert result.exit_code == 2 and "no login" in result.output, result.output


def _mcp(path: Path, *extra: str, env: dict[str, str] | None = None) -> list[str]:
    return [FLOWSTUDIO, "mcp", "serve", str(path), "--transport", "http", *extra]


def test_mcp_over_http_refuses_a_public_host_without_a_token(tmp_path: Path) -> None:
    flows = Path(__file__).parents[1] / "mcp" / "flows"
    done = subprocess.run(_mcp(flows, "--host", "0.0.0.0", "--port", str(free_port())), capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2 and "--token-env" in done.stderr, done.stderr
    env = {**os.environ, TOKEN_ENV: ""}
    empty = subprocess.run(_mcp(flows, "--token-env", TOKEN_ENV), capture_output=True, text=True, timeout=60, env=env)
    assert empty.returncode == 2 and TOKEN_ENV in empty.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        busy = subprocess.run(_mcp(flows, "--port", str(port)), capture_output=True, text=True, timeout=60)
    assert busy.returncode in (1, 2) and f"127.0.0.1:{port}" in busy.stderr, busy.stderr


async def test_mcp_over_http_checks_token_host_body_and_inputs(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    shutil.copytree(Path(__file__).parents[1] / "mcp" / "flows", flows)
    (flows / "broken.yaml").write_text(
        "flowstudio: 1\nname: broken\noutputs: {text: $g.text}\n"
        "models: {default: {model: scripted/missing.yaml}}\n"
        "nodes:\n  g: {type: llm.generate, config: {prompt: hi}}\n"
    )
    port = free_port()
    command = _mcp(flows, "--port", str(port), "--token-env", TOKEN_ENV, "--max-body-bytes", "20000")
    process = subprocess.Popen([*command, "--db", str(tmp_path / "runs.db")], env={**os.environ, TOKEN_ENV: TOKEN})
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_for_port(port, process)
        with httpx.Client(timeout=30) as raw:
            assert raw.post(url, json={}).status_code == 401
            auth = {"Authorization": f"Bearer {TOKEN}"}
            foreign = raw.post(url, json={}, headers={**auth, "Host": f"evil.example:{port}"})
            assert foreign.status_code == 403
            big = raw.post(url, content=b"x" * 30000, headers={**auth, "Content-Type": "application/json"})
            assert big.status_code == 413 and "20000 bytes" in big.text
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            for times in ("2", True):
                bad = await client.call_tool("arithmetic", {"expression": "6 * 7", "times": times})
                text = bad.content[0].text  # type: ignore[union-attr]
                assert bad.is_error and "arguments.times" in text and "integer" in text, text
            missing = await client.call_tool("arithmetic", {"times": 2})
            text = missing.content[0].text  # type: ignore[union-attr]
            assert missing.is_error and "expression" in text and str(flows) not in text
            broken = await client.call_tool("broken", {})
            text = broken.content[0].text  # type: ignore[union-attr]
            assert broken.is_error and "missing.yaml" in text and str(tmp_path) not in text, text
            good = await client.call_tool("arithmetic", {"expression": "6 * 7", "times": 1})
            assert not good.is_error
    finally:
        stop(process)


async def test_spans_carry_no_error_text_with_capture_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flow = tmp_path / "flow.yaml"
    flow.write_text(
        "flowstudio: 1\nname: structured\noutputs: {value: $s.data}\n"
        f"models: {{default: {{model: scripted, retries: 0, script: [{{reply: 'not json {SECRET}'}}]}}}}\n"
        "nodes:\n  s: {type: llm.structured, config: {prompt: give, fields: {n: int}, retries: 0}}\n"
    )

    async def descriptions(capture: str) -> list[str]:
        monkeypatch.setenv("FLOWSTUDIO_OTEL_CAPTURE_CONTENT", capture)
        memory = InMemorySpanExporter()
        hook = OtelHook("memory", exporter=memory)
        result = await Engine(MemoryStore(), hooks=[hook]).run(compile_flow(load_flow(flow)), {})
        hook.close()
        assert result.status == "failed" and SECRET in str(result.error)
        spans = memory.get_finished_spans()
        texts = [s.status.description or "" for s in spans]
        texts += [str(e.attributes) for s in spans for e in s.events]
        return texts

    off = await descriptions("")
    assert off and not any(SECRET in t for t in off) and any("withheld" in t for t in off)
    assert any(SECRET in t for t in await descriptions("1"))


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0
