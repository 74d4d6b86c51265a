"""Merged writes: a group-commit batch written with multi-row statements leaves the database
exactly as the same writes made one by one, each in its own transaction."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from studio.store import SQLiteStore
from studio.store.base import CallRecord, RunRecord, StepRecord
from studio.store.group import Write
from studio.store.recorder import Recorder
from studio.store.rows import COLUMNS, MAX_ROWS, EndRun, InsertRun, InsertStep, PutCache, apply_rows, values

TABLES = ("runs", "steps", "llm_calls", "cache")


def _run(run_id: str) -> RunRecord:
    return RunRecord(run_id=run_id, flow="f", flow_path=None, flow_hash="h", inputs={"q": run_id})


def _call(node: str, number: int) -> CallRecord:
    return CallRecord(node=node, model="scripted", request={"prompt": f"p{number}"}, response=f"r{number}", input_tokens=number, output_tokens=1, cost_usd=0.125)  # fmt: skip


def _writes() -> list[Write]:
    """Three runs, more steps than one statement takes, calls on every third step, repeated cache keys,
    a write of another kind in the middle, and each run ended."""
    writes: list[Write] = [InsertRun.of(_run(f"r{number}"), f"text {number}") for number in range(3)]
    for number in range(MAX_ROWS + 11):
        run_id = f"r{number % 3}"
        calls = [_call(f"n{number}", number), _call(f"n{number}", number + 1)] if number % 3 == 0 else []
        step = StepRecord(node=f"n{number}", status="succeeded", outputs={"text": "é" * number}, tokens=sum(c.input_tokens + c.output_tokens for c in calls), cost_usd=0.125 * len(calls), cached=number % 2 == 0)  # fmt: skip
        writes.append(InsertStep.of(run_id, step, calls))
        writes.append(PutCache.of(f"k{number % 5}", "scripted", {"text": f"v{number}"}))
        if number == 20:
            writes.append(_mark)
    writes += [EndRun.of(f"r{number}", "succeeded", {"n": number}, None) for number in range(3)]
    return writes


def _mark(conn: sqlite3.Connection) -> str:
    conn.execute("UPDATE runs SET error = 'marked' WHERE run_id = 'r1'")
    return "marked"


def _dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with sqlite3.connect(path) as conn:
        return {table: conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall() for table in TABLES}


def _one_by_one(path: Path, writes: list[Write]) -> list[Any]:
    store = SQLiteStore(path, group_commit=False)
    results = [store._write(write) for write in writes]
    store.close()
    return results


def _merged(path: Path, writes: list[Write]) -> list[Any]:
    store = SQLiteStore(path, group_commit=False)
    with store.transaction() as conn:
        results = apply_rows(conn, writes)
    store.close()
    return results


def test_a_merged_batch_equals_the_writes_one_by_one(tmp_path: Path) -> None:
    writes = _writes()
    alone = _one_by_one(tmp_path / "alone.db", writes)
    merged = _merged(tmp_path / "merged.db", writes)
    assert merged == alone
    assert _dump(tmp_path / "merged.db") == _dump(tmp_path / "alone.db")
    ends = [result for result in merged if isinstance(result, tuple)]
    assert [row[0] for row in ends] == ["r0", "r1", "r2"] and "marked" in merged
    store = SQLiteStore(tmp_path / "merged.db")
    runs = [store.get_run(f"r{number}") for number in range(3)]
    assert [run.steps for run in runs if run] == [25, 25, 25]
    assert sum(run.tokens for run in runs if run) == sum(n + 1 + n + 2 for n in range(0, MAX_ROWS + 11, 3))
    for call in store.calls("r0"):  # each call belongs to its own step
        assert call.node in {s.node for s in store.steps("r0")}
    store.close()


def test_a_run_ended_twice_in_one_batch_ends_as_the_second_says(tmp_path: Path) -> None:
    writes: list[Write] = [
        InsertRun.of(_run("r"), None),
        EndRun.of("r", "waiting", None, "waiting for input at a"),
        EndRun.of("r", "succeeded", {"x": 1}, None),
        EndRun.of("nobody", "succeeded", None, None),
    ]
    merged = _merged(tmp_path / "m.db", writes)
    assert merged == _one_by_one(tmp_path / "a.db", writes)
    status = COLUMNS[RunRecord].index("status")
    assert merged[1][status] == "waiting" and merged[2][status] == "succeeded" and merged[3] is None
    assert _dump(tmp_path / "m.db") == _dump(tmp_path / "a.db")


def test_rows_are_a_snapshot_taken_when_the_write_is_asked_for() -> None:
    step = StepRecord(node="a", status="succeeded", outputs={"text": "before"})
    write = InsertStep.of("r", step, [])
    step.outputs = {"text": "after"}
    assert write.row == tuple(values(StepRecord(node="a", status="succeeded", outputs={"text": "before"}, started_at=step.started_at, ended_at=step.ended_at)))  # fmt: skip
    assert '"before"' in write.row[3]


async def test_the_writer_links_each_call_to_its_step(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    recorder = Recorder(store)
    for number in range(8):
        recorder.create_run(_run(f"r{number}"))
    await asyncio.gather(
        *(
            recorder.finish_step(f"r{i % 8}", StepRecord(node=f"n{i}", status="succeeded"), [_call(f"n{i}", i)])
            for i in range(200)
        )
    )
    assert store.writer is not None and store.writer.transactions < 100
    pairs = store.conn.execute("SELECT c.node, s.node, c.run_id = s.run_id FROM llm_calls c JOIN steps s ON s.id = c.step_id")  # fmt: skip
    assert sorted(pairs) == sorted((f"n{i}", f"n{i}", 1) for i in range(200))
    store.close()
