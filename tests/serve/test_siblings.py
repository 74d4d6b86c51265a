"""Servers that share a store with sibling processes (`--workers N`, replicas): a cancel that
reaches the wrong one, and a dead sibling's background runs claimed once."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from studio.serve import ledger as ledger_module
from studio.serve import manager as manager_module
from studio.serve.ledger import SQLiteLedger
from studio.serve.manager import NotNow, RunManager
from studio.store import SQLiteStore
from studio.store.base import RunRecord, Store
from tests.serve.test_events import starter


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[SQLiteStore, SQLiteStore]]:
    """Two connections to one store file, as two worker processes have."""
    first, second = SQLiteStore(tmp_path / "runs.db"), SQLiteStore(tmp_path / "runs.db")
    yield first, second
    first.close()
    second.close()


def asked(store: Store) -> list[str]:
    assert isinstance(store, SQLiteStore)
    return [row[0] for row in store.conn.execute("SELECT run_id FROM serve_cancels")]


async def test_a_cancel_reaching_a_sibling_stops_the_run_where_it_runs(stores: tuple[SQLiteStore, SQLiteStore]) -> None:
    driver, sibling = RunManager(stores[0], 4, siblings=True), RunManager(stores[1], 4, siblings=True)
    driver.recover(), sibling.recover()  # starts their watchers
    try:
        run = driver.start(starter("steps.yaml", {"topic": "elsewhere"}), "background")
        run_id = await run.wait_started()
        while not driver.store.steps(run_id):
            await asyncio.sleep(0.05)
        record = await sibling.cancel(run_id)
        assert record.status == "cancelled" and record.error == "cancelled"
        assert run.task is not None and run.task.cancelled()
        await asyncio.sleep(0.8)
        assert [s.node for s in driver.store.steps(run_id)] == ["first"]
        assert run_id not in driver.active and asked(driver.store) == []
    finally:
        await driver.shutdown()
        await sibling.shutdown()


async def test_a_cancel_nobody_takes_is_refused_and_withdrawn(
    stores: tuple[SQLiteStore, SQLiteStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's driver does not watch the store (a lone server, `flowstudio run`): 409, no request left."""
    monkeypatch.setattr(manager_module, "CANCEL_WAIT_S", 0.5)
    driver, sibling = RunManager(stores[0], 4), RunManager(stores[1], 4, siblings=True)
    try:
        run = driver.start(starter("steps.yaml", {"topic": "alone"}), "background")
        run_id = await run.wait_started()
        with pytest.raises(NotNow, match=r"did not stop it within 0\.5 s"):
            await sibling.cancel(run_id)
        assert asked(sibling.store) == [] and driver.get(run_id).status == "running"
    finally:
        await driver.shutdown()
        await sibling.shutdown()


async def test_an_interrupted_run_is_closed_as_cancelled(stores: tuple[SQLiteStore, SQLiteStore]) -> None:
    store = stores[0]
    store.create_run(RunRecord(run_id="gone", flow="steps", flow_path=None, flow_hash="h", inputs={}, options={}))
    store.conn.execute("UPDATE runs SET pid = ? WHERE run_id = 'gone'", (dead_pid(),))
    manager = RunManager(store, 4)
    assert manager.get("gone").status == "interrupted"
    assert (await manager.cancel("gone")).status == "cancelled"


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_a_dead_siblings_background_run_is_claimed_once(
    stores: tuple[SQLiteStore, SQLiteStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, other = stores
    for run_id in ("left", "raced"):
        store.create_run(RunRecord(run_id=run_id, flow="steps", flow_path=None, flow_hash="h", inputs={}, options={}))
    ledger, dead = SQLiteLedger(store), dead_pid()
    for run_id in ("left", "raced"):
        store.conn.execute("INSERT INTO serve_background VALUES (?, ?, ?)", (run_id, dead, f"2026-12-05 {run_id}"))

    def gone(pid: int) -> bool:  # meanwhile a sibling (pid 1, alive) claims `raced` first
        other.conn.execute("UPDATE serve_background SET owner_pid = 1 WHERE run_id = 'raced'")
        return pid != 1

    monkeypatch.setattr(ledger_module, "process_exists", lambda pid: not gone(pid))
    assert ledger.orphans() == ["left"]
    owners = dict(store.conn.execute("SELECT run_id, owner_pid FROM serve_background").fetchall())
    assert owners == {"left": os.getpid(), "raced": 1}
