"""Durability modes (sync, async, exit): the crash drill per mode, and where a run's mode comes from."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from bench import crash_drill
from studio.errors import SpecError
from studio.flow.spec import load_flow_text
from studio.runtime.compiler import compile_flow
from studio.runtime.durability import choose
from studio.runtime.engine import Engine, RunOptions
from studio.runtime.runner import resume_run_async, run_flow_async
from studio.store import MemoryStore
from studio.store.base import StepRecord
from studio.store.group import GroupWriter
from studio.store.recorder import Recorder
from studio.store.rows import COLUMNS, InsertStep
from studio.store.sqlite import SQLiteStore
from tests.serve.conftest import Server, serve_command

KILL_POINTS = {"sync": [4], "async": [2, 6, 10], "exit": [3, 10]}
"""Where each mode's drill kills the run: once the scripted model has answered this many calls
(10 is the last node: the kill lands while the run ends). `tests/test_durable.py` kills sync runs
at random points too."""

FAN = """flowstudio: 1
name: fan
models:
  default: {model: scripted, script: [{match: '^one', reply: '1'}, {match: '^two', reply: '22'}, {reply: '333'}]}
outputs: {out: $c.text}
nodes:
  a: {type: llm.generate, config: {prompt: one}}
  b: {type: llm.generate, inputs: {x: $a.text}, config: {prompt: 'two {{ x }}'}}
  d: {type: llm.generate, inputs: {x: $a.text}, config: {prompt: 'three {{ x }}'}}
  c: {type: llm.generate, inputs: {x: $b.text, y: $d.text}, config: {prompt: 'four {{ x }} {{ y }}'}}
"""


@pytest.mark.parametrize("mode", ["sync", "async", "exit"])
def test_crash_drill_per_mode(tmp_path: Path, mode: str) -> None:
    """SIGKILL a run at several points in each mode; what the mode promises is what survives,
    and the resume always ends with the golden outputs."""
    rng = random.Random(3)
    points = KILL_POINTS[mode]
    with ThreadPoolExecutor(len(points)) as pool:  # the trials mostly wait: run them side by side
        trials = pool.map(
            lambda n: crash_drill.trial(tmp_path, n, rng, mode, kill_after_calls=points[n]), range(len(points))
        )
    for calls, result in zip(points, trials, strict=True):
        assert result["killed_before_start"] is False, result
        assert result["finished_run_complete"], result  # a run stored as succeeded has every step
        assert result["status_after"] == "succeeded", result
        assert result["lost_steps"] == 0 and result["reexecuted_finished"] == 0, result
        assert result["outputs_equal_golden"] and result["integrity_ok"], result
        if result["status_before_resume"] == "succeeded":
            continue
        if mode == "exit":  # nothing was written before the end: the resume starts over
            assert result["finished_before_kill"] == 0 and result["resumed_from_start"], result
        if mode == "sync":  # every answered call but those in flight was committed
            assert result["finished_before_kill"] >= calls - 2, result
            assert result["interrupted_extra_calls"] <= 2, result


def _run(flow: Path, db: Path, **options: Any) -> Any:
    return asyncio.run(run_flow_async(flow, {}, options=RunOptions(cache=False, **options), db=db))


@pytest.mark.parametrize("mode", ["sync", "async", "exit"])
def test_a_finished_run_is_complete_in_every_mode(tmp_path: Path, mode: str) -> None:
    flow = tmp_path / "fan.yaml"
    flow.write_text(FAN)
    db = tmp_path / "runs.db"
    result = _run(flow, db, durability=mode)
    assert result.status == "succeeded" and result.outputs == {"out": "333"}
    store = SQLiteStore(db)
    try:
        run = store.get_run(result.run_id)
        steps = store.steps(result.run_id)
        assert run is not None and run.options["durability"] == mode
        assert run.steps == 4 and run.tokens == sum(s.tokens for s in result.steps) > 0
        assert [s.node for s in steps] == [s.node for s in result.steps]  # rows in the order they finished
        assert len(store.calls(result.run_id)) == 4
    finally:
        store.close()


def test_the_flow_field_sets_the_mode_a_run_overrides_it_and_a_resume_keeps_it(tmp_path: Path) -> None:
    flow = tmp_path / "fan.yaml"
    flow.write_text(FAN.replace("name: fan\n", "name: fan\ndurability: exit\n"))
    db = tmp_path / "runs.db"
    by_flow = _run(flow, db)
    by_run = _run(flow, db, durability="async")
    store = SQLiteStore(db)
    try:
        assert store.get_run(by_flow.run_id).options["durability"] == "exit"  # type: ignore[union-attr]
        assert store.get_run(by_run.run_id).options["durability"] == "async"  # type: ignore[union-attr]
        store.set_status(by_run.run_id, "failed")
    finally:
        store.close()
    again = asyncio.run(resume_run_async(by_run.run_id, db=db))
    assert again.status == "succeeded" and again.steps == []  # every step was stored: nothing ran again


def test_choose_and_a_bad_mode_in_the_flow_file() -> None:
    assert choose(None, None) == "sync" and choose(None, None, "async") == "async"
    assert choose(None, "exit", "async") == "exit" and choose("sync", "exit", "async") == "sync"
    with pytest.raises(SpecError) as caught:
        load_flow_text(FAN.replace("name: fan\n", "name: fan\ndurability: later\n"))
    assert caught.value.field == "durability" and caught.value.line == 3


def test_serve_durability_is_the_mode_of_flows_that_name_none(tmp_path: Path) -> None:
    folder = tmp_path / "flows"
    folder.mkdir()
    (folder / "fan.yaml").write_text(FAN)
    (folder / "fan-exit.yaml").write_text(FAN.replace("name: fan\n", "name: fan-exit\ndurability: exit\n"))
    db = tmp_path / "runs.db"
    server = Server(serve_command(folder, db, "--durability", "async")).start()
    try:
        with server.client() as client:
            ran = {name: client.post(f"/flows/{name}/runs", json={"mode": "wait"}) for name in ("fan", "fan-exit")}
    finally:
        server.stop()
    assert all(r.status_code == 200 for r in ran.values()), {n: r.text for n, r in ran.items()}
    store = SQLiteStore(db)
    try:
        modes = {name: store.get_run(r.json()["run_id"]).options["durability"] for name, r in ran.items()}  # type: ignore[union-attr]
        assert modes == {"fan": "async", "fan-exit": "exit"}
        assert all(len(store.steps(r.json()["run_id"])) == 4 for r in ran.values())
    finally:
        store.close()


@pytest.mark.parametrize("mode", ["async", "exit"])
async def test_a_cancelled_run_still_writes_the_steps_it_finished(tmp_path: Path, mode: str) -> None:
    slow = FAN.replace("{reply: '333'}", "{match: '^four', reply: '333', delay_s: 5}, {reply: '333'}")
    plan = compile_flow(load_flow_text(slow))
    finished: list[str] = []

    def hook(event: str, **details: Any) -> None:
        if event == "step_finished":
            finished.append(details["step"].node)

    store = SQLiteStore(tmp_path / "runs.db")
    try:
        engine = Engine(store, hooks=[hook])
        task = asyncio.create_task(engine.run(plan, {}, options=RunOptions(durability=mode, cache=False)))
        while len(finished) < 3:
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        run = store.query_runs()[0]
        assert run.status == "cancelled"
        assert sorted(s.node for s in store.steps(run.run_id)) == ["a", "b", "d"]
    finally:
        store.close()


@pytest.mark.parametrize("mode", ["async", "exit"])
@pytest.mark.parametrize("kind", ["memory", "sqlite-one-transaction-per-write"])
async def test_stores_without_group_commit_keep_the_steps_in_order(tmp_path: Path, mode: str, kind: str) -> None:
    """Without a group-commit writer each write waits for the one before, so rows keep their order."""
    store: Any = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "runs.db", group_commit=False)
    try:
        plan = compile_flow(load_flow_text(FAN))
        result = await Engine(store).run(plan, {}, options=RunOptions(durability=mode, cache=False))
        assert result.status == "succeeded"
        assert [s.node for s in store.steps(result.run_id)] == [s.node for s in result.steps]
        assert store.get_run(result.run_id).steps == 4
    finally:
        store.close()


class RefusingStore(MemoryStore):
    """A store whose disk fills after two steps: every later step write fails."""

    def finish_step(self, run_id: str, step: Any, calls: Any) -> None:
        if len(self._steps[run_id]) >= 2:
            raise OSError(28, "No space left on device")
        super().finish_step(run_id, step, calls)


@pytest.mark.parametrize("mode", ["sync", "async", "exit"])
async def test_a_step_the_store_refuses_ends_the_run_failed_not_running(mode: str) -> None:
    store = RefusingStore()
    plan = compile_flow(load_flow_text(FAN))
    with pytest.raises(OSError, match="No space left"):
        await Engine(store).run(plan, {}, options=RunOptions(durability=mode, cache=False))
    run = store.query_runs()[0]
    assert run.status == "failed" and "No space left on device" in (run.error or "")


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_the_last_step_shares_the_ends_commit(tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing but the run's end waits on its last step, so both are one transaction; every
    other step is committed before the end (`sync`: before the end is queued; `async`: queued
    ahead of it, so it may share the end's transaction)."""
    batches: list[list[str]] = []
    transaction = GroupWriter._transaction

    def seen(self: GroupWriter, conn: Any, items: list[Any]) -> None:
        batches.append([_named(item.write) for item in items])
        transaction(self, conn, items)

    monkeypatch.setattr(GroupWriter, "_transaction", seen)
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        plan = compile_flow(load_flow_text(FAN))
        result = await Engine(store).run(plan, {}, options=RunOptions(durability=mode, cache=False))
        assert result.status == "succeeded" and store.get_run(result.run_id).steps == 4
        *earlier, last = batches
        assert last[-2:] == ["c", "EndRun"], batches
        written = [name for batch in batches for name in batch]
        assert written[0] == "InsertRun"  # queued first: committed ahead of every step
        assert sorted(written[1:-2]) == ["a", "b", "d"], batches  # every step before the end
        if mode == "sync":  # each step committed before its dependents start: before the end is queued
            assert sorted(node for batch in earlier for node in batch if node in "abd") == ["a", "b", "d"]
    finally:
        store.close()


def _named(write: Any) -> str:
    """A queued write as the test names it: a step by its node, any other by its kind."""
    if isinstance(write, InsertStep):
        return str(write.row[COLUMNS[StepRecord].index("node")])
    return type(write).__name__


async def test_an_async_runs_end_is_queued_behind_its_steps_not_after_their_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the writer is still busy with the run's first transaction, the end is already queued
    behind the steps (so they can share one commit), and it is committed no earlier than them."""
    end_queued = threading.Event()
    seen_in_first: list[bool] = []
    batches: list[list[str]] = []
    transaction, finish_run = GroupWriter._transaction, Recorder.finish_run

    def held(self: GroupWriter, conn: Any, items: list[Any]) -> None:
        if not seen_in_first:  # the first transaction waits until the end is queued (or 5 s)
            seen_in_first.append(end_queued.wait(timeout=5))
        batches.append([_named(item.write) for item in items])
        transaction(self, conn, items)

    async def ending(self: Recorder, run_id: str, **kwargs: Any) -> Any:
        end_queued.set()
        return await finish_run(self, run_id, **kwargs)

    monkeypatch.setattr(GroupWriter, "_transaction", held)
    monkeypatch.setattr(Recorder, "finish_run", ending)
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        plan = compile_flow(load_flow_text(FAN))
        result = await Engine(store).run(plan, {}, options=RunOptions(durability="async", cache=False))
        assert result.status == "succeeded" and store.get_run(result.run_id).steps == 4
    finally:
        store.close()
    assert seen_in_first == [True], batches
    written = [name for batch in batches for name in batch]
    assert written[0] == "InsertRun" and written[-1] == "EndRun" and sorted(written[1:-1]) == ["a", "b", "c", "d"]


async def test_an_async_step_the_writer_refuses_ends_the_run_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The end is queued behind the steps, so it may commit before a refused step is known: the
    run is then ended `failed` after all, naming the refusal, never left `succeeded`."""
    transaction = GroupWriter._transaction

    def refusing(self: GroupWriter, conn: Any, items: list[Any]) -> None:
        if any(_named(item.write) == "b" for item in items):
            raise sqlite3.OperationalError("disk I/O error")
        transaction(self, conn, items)

    monkeypatch.setattr(GroupWriter, "_transaction", refusing)
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        plan = compile_flow(load_flow_text(FAN))
        with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
            await Engine(store).run(plan, {}, options=RunOptions(durability="async", cache=False))
        run = store.query_runs()[0]
        assert run.status == "failed" and "disk I/O error" in (run.error or ""), run
    finally:
        store.close()
