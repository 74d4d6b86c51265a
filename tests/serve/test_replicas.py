"""Two `flowstudio serve` replicas on one PostgreSQL: background runs are a leased work queue; a
replica killed with SIGKILL loses its leases, the other resumes its runs from their checkpoints."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import psycopg
from httpx_sse import connect_sse

from studio.serve.ledger import LEASE_ENV
from tests.conftest import FLOWSTUDIO
from tests.serve.conftest import Server

RUNS = 12


def _replica(flows: Path, url: str) -> Server:
    return Server([FLOWSTUDIO, "serve", str(flows), "--port", "0", "--db", url], env={LEASE_ENV: "3"}).start()


def _statuses(url: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        return dict(conn.execute("SELECT run_id, status FROM runs").fetchall())  # type: ignore[arg-type]


def test_a_killed_replicas_background_runs_finish_on_the_other_and_no_finished_step_runs_twice(
    flows_dir: Path, postgres_url: str
) -> None:
    first, second = _replica(flows_dir, postgres_url), _replica(flows_dir, postgres_url)
    try:
        owners: dict[str, Server] = {}
        for n in range(RUNS):
            replica = (first, second)[n % 2]
            body = {"inputs": {"topic": f"t{n}"}, "mode": "background"}
            answer = httpx.post(f"{replica.url}/flows/steps/runs", json=body, timeout=30)
            assert answer.status_code == 202, answer.text
            owners[answer.json()["run_id"]] = replica
        time.sleep(1.0)  # each run is part-way through its three 0.6 s steps
        first.kill9()
        killed_at = time.monotonic()
        deadline = killed_at + 90
        while time.monotonic() < deadline and set(_statuses(postgres_url).values()) != {"succeeded"}:
            time.sleep(0.2)
        statuses = _statuses(postgres_url)
        assert len(statuses) == RUNS and set(statuses.values()) == {"succeeded"}, statuses
        taken_from_first = [run_id for run_id, owner in owners.items() if owner is first]
        with (
            httpx.Client(base_url=second.url, timeout=30) as client,  # events of a run the killed one began
            connect_sse(client, "GET", f"/runs/{taken_from_first[0]}/events") as source,
        ):
            events = list(source.iter_sse())
    finally:
        first.stop()
        second.stop()
    assert events[-1].event == "run_finished" and json.loads(events[-1].data)["status"] == "succeeded"
    assert [json.loads(e.data)["node"] for e in events if e.event == "step_finished"] == ["first", "second", "third"]
    with psycopg.connect(postgres_url) as conn:
        twice = conn.execute(
            "SELECT run_id, node, count(*) FROM steps WHERE status = 'succeeded' GROUP BY run_id, node HAVING count(*) > 1"
        ).fetchall()
        claims = conn.execute("SELECT run_id, claims FROM serve_queue WHERE claims > 1").fetchall()
    assert twice == []
    assert {run_id for run_id, _ in claims} <= set(taken_from_first) and claims  # taken over, by the other replica
