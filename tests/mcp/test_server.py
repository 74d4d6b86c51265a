"""`flowstudio mcp serve`: every flow as a tool, called with the official client over stdio and HTTP."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from studio.store import SQLiteStore
from tests.conftest import FLOWSTUDIO
from tests.mcp.conftest import free_port, stop, wait_for_port

pytestmark = pytest.mark.slow  # each test starts `flowstudio mcp serve`

FLOWS = Path(__file__).with_name("flows")
CALLS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "arithmetic": ({"expression": "6 * 7", "times": 2}, {"value": 42, "repeated": "42 42 "}),
    "chain": ({"topic": "cats"}, {"headline": "SUNNY DAYS AHEAD!", "draft": "sunny days ahead"}),
}
"""Arguments and expected structured output, for every flow in tests/mcp/flows."""


@asynccontextmanager
async def over_stdio(db: Path) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=FLOWSTUDIO, args=["mcp", "serve", str(FLOWS)], env={"FLOWSTUDIO_DB": str(db)}
    )
    async with Client(params) as client:
        yield client


@asynccontextmanager
async def over_http(db: Path) -> AsyncIterator[Client]:
    port = free_port()
    command = [FLOWSTUDIO, "mcp", "serve", str(FLOWS), "--transport", "http", "--port", str(port), "--db", str(db)]
    process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            yield client
    finally:
        stop(process)


@pytest.mark.parametrize("connect", [over_stdio, over_http], ids=["stdio", "http"])
async def test_every_flow_is_a_tool_with_typed_schemas_progress_and_a_stored_run(
    connect: Callable[[Path], Any], tmp_path: Path
) -> None:
    db = tmp_path / "served.db"
    assert {p.stem for p in FLOWS.glob("*.yaml")} == set(CALLS)
    async with connect(db) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == set(CALLS)
        schema = listed["arithmetic"].input_schema
        assert schema["properties"]["times"] == {"type": "integer", "default": 1}
        assert schema["required"] == ["expression"]
        assert listed["chain"].output_schema["properties"]["headline"] == {"type": "string"}
        run_ids = {}
        for name, (arguments, expected) in CALLS.items():
            progress: list[tuple[float, float | None, str | None]] = []

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                progress.append((done, total, message))  # noqa: B023

            result = await client.call_tool(name, arguments, progress_callback=on_progress)
            assert not result.is_error, result.content
            assert result.structured_content == expected
            nodes = len(expected) if name == "arithmetic" else 3
            assert [p[0] for p in progress] == [float(i) for i in range(1, nodes + 1)]
            assert {p[1] for p in progress} == {float(nodes)} and all(": succeeded" in (p[2] or "") for p in progress)
            assert result.meta is not None
            run_ids[name] = result.meta["flowstudio/run_id"]
        failed = await client.call_tool("arithmetic", {"expression": "import os"})
        assert failed.is_error and "not an arithmetic expression" in failed.content[0].text  # type: ignore[union-attr]
        bad = await client.call_tool("arithmetic", {"times": 2})
        assert bad.is_error and "input 'expression' is required" in bad.content[0].text  # type: ignore[union-attr]
    store = SQLiteStore(db)
    try:
        for name, run_id in run_ids.items():
            run = store.get_run(run_id)
            assert run is not None and run.flow == name and run.status == "succeeded"
            assert run.outputs == CALLS[name][1]
    finally:
        store.close()


def test_a_bad_flow_is_refused_before_serving(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    flow = tmp_path / "bad.yaml"
    flow.write_text("flowstudio: 1\nname: bad\nnodes:\n  x: {type: no.such}\n")
    result = cli("mcp", "serve", str(flow))
    assert result.code == 2 and "unknown node type" in result.err
