"""Lease fencing on PostgreSQL: a replica that lost a background run (paused past its lease while
another claimed it) writes nothing more for that run, even before its next renewal."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import pytest

from studio.serve.ledger import LEASE_ENV, LeaseLost, PostgresLedger
from studio.store.base import RunRecord, StepRecord
from studio.store.postgres import PostgresStore
from studio.store.recorder import Recorder
from tests.conftest import FLOWSTUDIO
from tests.serve.conftest import Server


def _steps(url: str, run_id: str) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT node FROM steps WHERE run_id = %s ORDER BY id", (run_id,)).fetchall()
    return [node for (node,) in rows]


def test_a_replica_whose_run_was_claimed_cannot_write_its_steps_end_or_events(postgres_url: str) -> None:
    first, second = PostgresStore(postgres_url), PostgresStore(postgres_url)
    lost: list[str] = []
    old = PostgresLedger(first, lease_s=0.3, on_lost=lost.append)
    new = PostgresLedger(second, lease_s=30)
    run = RunRecord(run_id="r1", flow="f", flow_path=None, flow_hash="h", inputs={})
    try:
        first.create_run(run)
        old.mark_background("r1")
        asyncio.run(Recorder(first).finish_step("r1", StepRecord("a", "succeeded"), []))
        assert new.orphans() == []  # the lease still holds
        time.sleep(0.5)
        assert new.orphans() == ["r1"]  # the old owner was paused past its lease; the other claims it
        with pytest.raises(LeaseLost):  # the old owner wakes: its step is refused, group commit or not
            asyncio.run(Recorder(first).finish_step("r1", StepRecord("b", "succeeded"), []))
        with pytest.raises(LeaseLost):
            first.finish_step("r1", StepRecord("b", "succeeded"), [])
        with pytest.raises(LeaseLost):  # nor may it record the cancellation it would write as it stops
            first.finish_run("r1", status="cancelled", outputs=None, error="cancelled")
        with pytest.raises(LeaseLost):
            first.set_status("r1", "running")
        old.record(("r1", 9, 0, "step_started", "{}"))
        asyncio.run(old.flush())
        assert lost and set(lost) == {"r1"}
        asyncio.run(Recorder(second).finish_step("r1", StepRecord("b", "succeeded"), []))  # the new owner writes
        asyncio.run(Recorder(second).finish_run("r1", status="succeeded", outputs={}, error=None))
        assert old.renew(["r1"]) == ["r1"]
        assert new.announced("r1") == []  # the refused event id was not kept
    finally:
        first.close()
        second.close()
    assert _steps(postgres_url, "r1") == ["a", "b"]
    with psycopg.connect(postgres_url) as conn:
        status, claims = conn.execute(
            "SELECT r.status, q.claims FROM runs r JOIN serve_queue q USING (run_id) WHERE run_id = 'r1'"
        ).fetchone()  # type: ignore[misc]
    assert (status, claims) == ("succeeded", 2)


def test_a_write_in_flight_holds_off_a_claim_but_never_a_renewal(postgres_url: str) -> None:
    store, other = PostgresStore(postgres_url), PostgresStore(postgres_url)
    mine, theirs = PostgresLedger(store, lease_s=0.3), PostgresLedger(other, lease_s=30)
    try:
        store.create_run(RunRecord(run_id="r1", flow="f", flow_path=None, flow_hash="h", inputs={}))
        mine.mark_background("r1")
        time.sleep(0.4)  # the lease ran out
        with ThreadPoolExecutor(1) as pool, store.transaction() as conn:
            store.fences["r1"](conn)  # a fenced write's check passed; its transaction is still open
            assert theirs.orphans() == []  # the claim passes the row by instead of taking it mid-write
            assert pool.submit(mine.renew, ["r1"]).result(timeout=10) == []  # the renewal does not wait
        time.sleep(0.4)
        assert theirs.orphans() == ["r1"]
    finally:
        store.close()
        other.close()


def test_a_paused_replica_that_wakes_after_the_takeover_stops_without_writing(
    flows_dir: Path, postgres_url: str
) -> None:
    env = {LEASE_ENV: "2"}
    paused = Server([FLOWSTUDIO, "serve", str(flows_dir), "--port", "0", "--db", postgres_url], env=env).start()
    other = Server([FLOWSTUDIO, "serve", str(flows_dir), "--port", "0", "--db", postgres_url], env=env).start()
    assert paused.process is not None
    try:
        body = {"inputs": {"topic": "t"}, "mode": "background"}
        answer = httpx.post(f"{paused.url}/flows/steps/runs", json=body, timeout=30)
        assert answer.status_code == 202, answer.text
        run_id = answer.json()["run_id"]
        time.sleep(0.3)  # inside the first of its three 0.6 s steps
        os.kill(paused.process.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _status(postgres_url, run_id) != "succeeded":
            time.sleep(0.2)
        assert _status(postgres_url, run_id) == "succeeded"
        written = _steps(postgres_url, run_id)
        os.kill(paused.process.pid, signal.SIGCONT)  # its first step finishes at once and is refused
        time.sleep(2.5)
        assert paused.process.poll() is None
    finally:
        os.kill(paused.process.pid, signal.SIGCONT)
        paused.stop()
        other.stop()
    assert written == ["first", "second", "third"]
    assert _steps(postgres_url, run_id) == written
    assert _status(postgres_url, run_id) == "succeeded"
    assert paused.process.stdout is not None
    assert "taken over by another server" in paused.process.stdout.read()


def _status(url: str, run_id: str) -> str | None:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT status FROM runs WHERE run_id = %s", (run_id,)).fetchone()
    return row[0] if row else None
