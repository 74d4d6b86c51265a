"""Group commit: concurrent runs share the writer's transactions, and a step's dependents still
start only once the step is on disk."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from studio.flow.spec import load_flow_text
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine
from studio.store import SQLiteStore, group
from studio.store.base import RunRecord, StepRecord
from studio.store.group import GroupWriter
from studio.store.recorder import Recorder

CHAIN = """flowstudio: 1
name: chain
inputs: {q: {type: str}}
outputs: {out: $c.text}
models:
  default: {model: scripted, script: [{reply: ok, delay_s: 0.01}]}
nodes:
  a: {type: llm.generate, inputs: {q: $inputs.q}, config: {prompt: "a {{ q }}"}}
  b: {type: llm.generate, inputs: {x: $a.text}, config: {prompt: "b {{ x }}"}}
  c: {type: text.template, inputs: {x: $b.text}, config: {template: "{{ x }}"}}
"""


def _run(run_id: str) -> RunRecord:
    return RunRecord(run_id=run_id, flow="f", flow_path=None, flow_hash="h", inputs={})


async def test_concurrent_steps_share_transactions(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    recorder = Recorder(store)
    for number in range(8):
        recorder.create_run(_run(f"r{number}"))
    await recorder.settled()
    assert store.writer is not None
    before = store.writer.transactions
    steps = [StepRecord(node=f"n{i}", status="succeeded") for i in range(200)]
    await asyncio.gather(*(recorder.finish_step(f"r{i % 8}", step, []) for i, step in enumerate(steps)))
    committed = store.writer.transactions - before
    assert sum(len(store.steps(f"r{number}")) for number in range(8)) == 200
    assert committed < 200 / 4, committed  # many steps to one fsync
    store.close()


async def test_a_run_row_is_queued_and_committed_ahead_of_later_writes(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    recorder = Recorder(store)
    assert recorder.create_run(_run("r")) is None  # queued: the engine's nodes start meanwhile
    await recorder.finish_step("r", StepRecord(node="a", status="succeeded"), [])
    assert store.get_run("r") is not None and [step.node for step in store.steps("r")] == ["a"]
    recorder.create_run(_run("s"))
    await recorder.settled()
    assert store.get_run("s") is not None
    store.close()


async def test_a_bad_write_fails_alone(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    recorder = Recorder(store)
    recorder.create_run(_run("r"))
    good = [recorder.finish_step("r", StepRecord(node=f"n{i}", status="succeeded"), []) for i in range(5)]
    bad = recorder.finish_step("nobody", StepRecord(node="x", status="succeeded"), [])  # no such run: FOREIGN KEY
    results = await asyncio.gather(*good, bad, return_exceptions=True)
    assert results[:5] == [None] * 5
    assert isinstance(results[5], sqlite3.IntegrityError)
    assert len(store.steps("r")) == 5
    store.close()


def test_the_writer_syncs_fully(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    seen: list[int] = []
    asyncio.run(_pragma(store, seen))
    assert seen == [2]  # synchronous=FULL on the writer's own connection too
    store.close()


async def _pragma(store: SQLiteStore, seen: list[int]) -> None:
    assert store.writer is not None
    await store.writer.write(lambda conn: seen.append(conn.execute("PRAGMA synchronous").fetchone()[0]))


@pytest.mark.parametrize("group_commit", [True, False])
async def test_a_steps_dependents_start_only_after_its_commit(tmp_path: Path, group_commit: bool) -> None:
    """At every step start, each upstream step is already readable from another connection."""
    db = tmp_path / "s.db"
    store = SQLiteStore(db, group_commit=group_commit)
    problems: list[str] = []
    upstream = {"b": "a", "c": "b"}

    def hook(*, event: str, **details: Any) -> None:
        if event != "step_started" or details["node"] not in upstream:
            return
        with sqlite3.connect(db) as other:
            nodes = {row[0] for row in other.execute("SELECT node FROM steps WHERE run_id = ?", (details["run_id"],))}
        if upstream[details["node"]] not in nodes:
            problems.append(f"{details['node']} started before {upstream[details['node']]} was committed")

    plan = compile_flow(load_flow_text(CHAIN, "chain.yaml"))
    engine = Engine(store, hooks=[hook])
    results = await asyncio.gather(*(engine.run(plan, {"q": str(i)}) for i in range(16)))
    assert {r.status for r in results} == {"succeeded"} and problems == []
    store.close()


def _noted(conn: sqlite3.Connection, value: int = 1) -> None:
    conn.execute("INSERT INTO noted VALUES (?)", (value,))


def _one_posted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, linger_s: float) -> tuple[SQLiteStore, GroupWriter]:
    """A store whose writer lingers `linger_s` and has one write posted (nobody waits for it)."""
    monkeypatch.setattr(group, "LINGER_S", linger_s)
    store = SQLiteStore(tmp_path / "s.db")
    store.conn.execute("CREATE TABLE noted (value INTEGER)")
    assert store.writer is not None
    store.writer.post(_noted)
    return store, store.writer


def _noted_rows(store: SQLiteStore) -> int:
    return int(store.conn.execute("SELECT count(*) FROM noted").fetchone()[0])


async def test_a_write_nobody_waits_for_lingers_to_share_the_next_awaited_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's row is posted and its end awaited a moment later: one transaction, one fsync."""
    store, writer = _one_posted(tmp_path, monkeypatch, 0.5)
    await asyncio.sleep(0.05)  # the writer has long picked the posted write up
    await writer.write(lambda conn: _noted(conn, 2))
    assert (writer.transactions, writer.writes, _noted_rows(store)) == (1, 2, 2)
    store.close()


async def test_a_write_nobody_waits_for_is_committed_alone_after_the_linger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, writer = _one_posted(tmp_path, monkeypatch, 0.2)
    await asyncio.sleep(0.05)
    assert writer.transactions == 0  # still waiting for company
    for _ in range(100):
        if writer.transactions:
            break
        await asyncio.sleep(0.05)
    assert (writer.transactions, _noted_rows(store)) == (1, 1)
    store.close()


def test_closing_a_lingering_writer_commits_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, writer = _one_posted(tmp_path, monkeypatch, 30.0)
    started = time.monotonic()
    writer.close()
    assert time.monotonic() - started < 5
    assert _noted_rows(store) == 1
    store.close()
