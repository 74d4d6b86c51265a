"""`flowstudio serve --workers N` as real processes: one port, one store, any worker answers for
any run; a dead worker is replaced and its background runs finished by a sibling; SIGTERM stops
all, and a parent killed with -9 takes its workers with it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from studio.models.scripted import LEDGER_ENV
from studio.store.base import process_exists
from tests.serve.conftest import Server, serve_command
from tests.serve.test_server import wait_for

pytestmark = pytest.mark.slow


def workers_of(server: Server) -> set[int]:
    assert server.process is not None
    pid = server.process.pid
    return {int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


def run_pids(db: Path) -> set[int]:
    with sqlite3.connect(db) as conn:
        return {row[0] for row in conn.execute("SELECT DISTINCT pid FROM runs")}


def burst(server: Server, count: int) -> list[dict[str, Any]]:
    """`count` runs at once, each on a connection of its own (the kernel picks a worker for each)."""

    def one(n: int) -> dict[str, Any]:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            answer = client.post("/flows/reply/runs", json={"inputs": {"question": f"q{n}"}})
            assert answer.status_code == 200, answer.text
            return dict(answer.json())

    with ThreadPoolExecutor(16) as pool:
        return list(pool.map(one, range(count)))


def test_workers_share_the_port_and_the_store_and_a_dead_one_is_replaced(tmp_path: Path, flows_dir: Path) -> None:
    db = tmp_path / "runs.db"
    server = Server(serve_command(flows_dir, db, "--workers", "2")).start()
    try:
        first = wait_for(lambda: len(workers_of(server)) == 2 and workers_of(server))
        wait_for(lambda: all(run["status"] == "succeeded" for run in burst(server, 32)) and run_pids(db) == first)
        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        now = wait_for(lambda: len(found := workers_of(server)) == 2 and victim not in found and found)
        assert len(now & first) == 1
        assert all(run["status"] == "succeeded" for run in burst(server, 16))
    finally:
        server.stop()
    assert server.process is not None and server.process.returncode == 0
    assert not any(process_exists(pid) for pid in now)


def test_a_killed_workers_background_run_is_finished_by_a_sibling(tmp_path: Path, flows_dir: Path) -> None:
    ledger, db = tmp_path / "ledger.jsonl", tmp_path / "runs.db"
    server = Server(serve_command(flows_dir, db, "--workers", "2"), env={LEDGER_ENV: str(ledger)}).start()
    try:
        with server.client() as client:
            run_id = client.post("/flows/steps/runs", json={"inputs": {"topic": "t"}, "mode": "background"}).json()[
                "run_id"
            ]
            wait_for(lambda: [s for s in client.get(f"/runs/{run_id}/trace").json() if s["status"] == "succeeded"])
            with sqlite3.connect(db) as conn:
                (driver,) = conn.execute("SELECT pid FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            os.kill(driver, signal.SIGKILL)
        with server.client() as client:  # a new connection: the live sibling (or the replacement) answers
            done = wait_for(lambda: (run := client.get(f"/runs/{run_id}").json())["status"] == "succeeded" and run)
            assert done["outputs"] == {"final": "three", "count": 2}
            assert [s["node"] for s in client.get(f"/runs/{run_id}/trace").json()] == ["first", "second", "third"]
    finally:
        server.stop()
    calls = [json.loads(line)["prompt"].split()[0] for line in ledger.read_text().splitlines()]
    assert calls.count("first") == 1 and calls.count("third") == 1, calls  # no finished step ran again


def test_a_cancel_reaches_the_worker_driving_the_run(tmp_path: Path, flows_dir: Path) -> None:
    server = Server(serve_command(flows_dir, tmp_path / "runs.db", "--workers", "2")).start()
    try:
        for n in range(4):  # each request on a new connection: some land on the other worker
            with server.client() as client:
                body = {"inputs": {"topic": f"stop {n}"}, "mode": "background"}
                run_id = client.post("/flows/steps/runs", json=body).json()["run_id"]
            with server.client() as client:
                cancelled = client.post(f"/runs/{run_id}/cancel")
                assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled", cancelled.text
    finally:
        server.stop()


def test_a_parent_killed_with_9_takes_its_workers_with_it(tmp_path: Path, flows_dir: Path) -> None:
    server = Server(serve_command(flows_dir, tmp_path / "runs.db", "--workers", "2")).start()
    children: set[int] = set()
    try:
        children = wait_for(lambda: len(workers_of(server)) == 2 and workers_of(server))
        server.kill9()
        wait_for(lambda: not any(process_exists(pid) for pid in children), timeout=15)
    finally:
        server.stop()
        for pid in children:
            if process_exists(pid):
                os.kill(pid, signal.SIGKILL)
