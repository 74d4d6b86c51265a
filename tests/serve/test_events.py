"""Run tasks and their events without a server: ids, replay, the token relay, cancel."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from studio.flow.spec import load_flow
from studio.runtime import runner
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


def resume_starter(run_id: str, values: dict[str, Any]) -> Any:
    async def begin(engine: Engine) -> RunResult:
        return await runner.resume_on(engine, run_id, values=values)

    return begin


def test_ids_parse_and_order() -> None:
    assert parse_id("12") == (12, 0, 0) and parse_id("12.3") == (12, 3, 0) and parse_id("12.3.4") == (12, 3, 4)
    assert Event((4, 0, 0), "step_finished", {}).id == "4" and Event((4, 2, 0), "waiting", {}).id == "4.2"
    assert Event((4, 0, 2), "token", {}).id == "4.0.2" and Event((4, 1, 3), "token", {}).id == "4.1.3"
    for bad in ("", "x", "1.x", "-1", "1.2.3.4", "1..2"):
        with pytest.raises(ValueError):
            parse_id(bad)
    assert Event((4, 1, 2), "token", {}).sse() == "id: 4.1.2\nevent: token\ndata: {}\n\n"


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
    stored = manager.replay(run_id)
    assert [(e.id, e.name, e.data) for e in live] == [(e.id, e.name, e.data) for e in stored]
    assert [e.id for e in live if e.name == "step_started"] == ["0.1", "2.1"]
    assert [e.id for e in live[-2:]] == ["4.1", "4.2"]
    without_records = replay(record, manager.store.steps(run_id))  # a run no server announced
    assert [e.id for e in without_records if e.name == "step_started"] == ["1", "3"]


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
    assert [e.id for e in events[2:8]] == ["2", "2.1", "2.1.1", "2.1.2", "4", "4.1"]
    replayed = manager.replay(events[0].data["run_id"])
    assert [(e.id, e.name) for e in events if e.name != "token"] == [(e.id, e.name) for e in replayed]


async def test_a_cancelled_run_replays_every_event_with_the_id_it_had_live(manager: RunManager) -> None:
    run = manager.start(starter("steps.yaml", {"topic": "cancel me"}), "stream")
    queue = run.channel.listen()
    run_id = await run.wait_started()
    while len(manager.store.steps(run_id)) < 2:
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.1)  # `third` has started: its step_started has no step row
    await manager.cancel(run_id)
    live = [event async for event in run.events(queue) if event is not None]
    assert [(e.id, e.name) for e in live[-3:]] == [
        ("4", "step_finished"),
        ("4.1", "step_started"),
        ("4.2", "run_finished"),
    ]
    assert live[-1].data["status"] == "cancelled"
    replayed = manager.replay(run_id)
    assert [(e.id, e.name, e.data) for e in replayed] == [(e.id, e.name, e.data) for e in live]
    follower = manager.follow(run_id, parse_id("2.1"))  # what a client that saw `second` start gets
    rest = [event async for event in follower if event is not None]
    assert [(e.id, e.name) for e in rest] == [(e.id, e.name) for e in live[4:]]
    assert rest[0].name == "step_finished" and rest[0].data["node"] == "second"


async def test_a_resumed_run_numbers_its_events_after_the_ones_it_stopped_with(manager: RunManager) -> None:
    first = manager.start(starter("approval.yaml", {"topic": "resume"}), "wait")
    run_id = (await first.result()).run_id
    before = manager.replay(run_id)
    resumed = manager.start(resume_starter(run_id, {"approve": True}), "stream", resuming="waiting")
    live = await collect(resumed)
    assert live[0].name == "run_started" and live[0].key > before[-1].key
    assert [e.id for e in live] == ["4.3", "4.4", "6", "6.1", "8", "8.1"]
    after = manager.replay(run_id)
    assert [(e.id, e.name) for e in after if e.key >= live[0].key] == [(e.id, e.name) for e in live]


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
