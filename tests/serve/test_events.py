"""Run tasks and their events without a server: ids, replay, the token relay, cancel."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from studio.flow.spec import load_flow
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine, RunResult
from studio.serve import chat
from studio.serve.catalog import Catalog
from studio.serve.events import Event, parse_id, replay
from studio.serve.manager import RunManager, RunTask
from studio.serve.schemas import inputs_schema, port_schema
from studio.store import SQLiteStore
from studio.types import parse_type
from tests.serve.conftest import SERVE_FLOWS


@pytest.fixture
def manager(tmp_path: Path) -> Any:
    store = SQLiteStore(tmp_path / "runs.db")
    yield RunManager(store, 4)
    store.close()


async def collect(run: RunTask) -> list[Event]:
    return [event async for event in run.events(run.channel.listen()) if event is not None]


def starter(flow: str, inputs: dict[str, Any], extra_hook: Any = None) -> Any:
    plan = compile_flow(load_flow(SERVE_FLOWS / flow))

    async def begin(engine: Engine) -> RunResult:
        if extra_hook is not None:
            engine.hooks.append(lambda **details: extra_hook(engine, **details))
        return await engine.run(plan, inputs)

    return begin


def test_ids_parse_and_order() -> None:
    assert parse_id("12") == (12, 0) and parse_id("12.3") == (12, 3)
    assert Event((4, 0), "step_finished", {}).id == "4" and Event((4, 2), "token", {}).id == "4.2"
    for bad in ("", "x", "1.x", "-1"):
        with pytest.raises(ValueError):
            parse_id(bad)
    assert Event((4, 2), "token", {}).sse() == "id: 4.2\nevent: token\ndata: {}\n\n"


def test_port_types_become_json_schemas() -> None:
    assert port_schema(parse_type("list[int] | null")) == {
        "anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]
    }
    assert port_schema(parse_type("any")) == {} and port_schema(parse_type("dict")) == {"type": "object"}
    plan = compile_flow(load_flow(SERVE_FLOWS / "steps.yaml"))
    schema = inputs_schema(plan)
    assert schema["required"] == ["topic"] and schema["additionalProperties"] is False
    assert schema["properties"]["tags"] == {"type": "array", "items": {"type": "string"}, "default": []}


async def test_live_events_carry_the_ids_replay_gives_them(manager: RunManager) -> None:
    run = manager.start(starter("approval.yaml", {"topic": "ids"}), "stream")
    live = await collect(run)
    run_id = live[0].data["run_id"]
    record = manager.store.get_run(run_id)
    assert record is not None and record.status == "waiting"
    stored = replay(record, manager.store.steps(run_id))
    assert [e.name for e in live] == [e.name for e in stored]
    durable = [(e.id, e.name, e.data) for e in live if e.name != "step_started"]
    assert durable == [(e.id, e.name, e.data) for e in stored if e.name != "step_started"]
    assert [e.id for e in live if e.name == "step_started"] == ["0.1", "2.1"]
    assert [e.id for e in stored if e.name == "step_started"] == ["1", "3"]


async def test_token_hook_calls_are_relayed_as_token_events_and_chat_chunks(manager: RunManager) -> None:
    def stream_tokens(engine: Engine, *, event: str, **details: Any) -> None:
        """What the streaming engine does: `token` hook calls while the node runs."""
        if event == "step_started" and details["node"] == "answer":
            for text in ("Paris ", "is "):
                engine.emit("token", run_id=details["run_id"], node="answer", text=text)

    run = manager.start(starter("reply.yaml", {"question": "capital?"}, stream_tokens), "stream")
    queue = run.channel.listen()
    served = Catalog(SERVE_FLOWS).get("reply")
    chunks = [chunk async for chunk in chat._chunks(manager, run, queue, served, "answer")]
    assert chunks[-1] == "data: [DONE]\n\n"
    contents = [c for c in chunks if '"content"' in c]
    assert '"content": "Paris "' in contents[1] and '"content": "is "' in contents[2]
    assert '"content": "the capital of France."' in contents[3]

    again = manager.start(starter("reply.yaml", {"question": "again?"}, stream_tokens), "stream")
    events = await collect(again)
    names = [e.name for e in events]
    assert names == [
        *("run_started", "step_started", "step_finished"),
        *("step_started", "token", "token", "step_finished", "run_finished"),
    ]
    tokens = [e for e in events if e.name == "token"]
    assert [e.data["text"] for e in tokens] == ["Paris ", "is "] and tokens[0].data["node"] == "answer"
    assert [e.id for e in events[2:7]] == ["2", "2.1", "2.2", "2.3", "4"]


async def test_cancel_records_cancelled_and_no_step_for_the_interrupted_node(manager: RunManager) -> None:
    run = manager.start(starter("steps.yaml", {"topic": "cancel me"}), "background")
    run_id = await run.wait_started()
    while not manager.store.steps(run_id):
        await asyncio.sleep(0.05)
    record = await manager.cancel(run_id)
    assert record.status == "cancelled" and record.error == "cancelled"
    await asyncio.sleep(0.8)
    assert [s.node for s in manager.store.steps(run_id)] == ["first"]
    assert run_id not in manager.active


def test_the_cli_and_the_package_import_no_web_framework() -> None:
    code = "import sys, studio.cli, studio.serve, studio.serve.console; print([m for m in ('fastapi', 'uvicorn', 'starlette') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
