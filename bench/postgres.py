"""PostgreSQL beside SQLite: the durable-step cost, batch throughput, and two serve replicas with one killed.

Parts:
  * durable - a 300-step chain of no-op nodes on the memory store, SQLite and PostgreSQL (best
    of three): ms per step, the checkpoint's share (store minus memory) and PostgreSQL / SQLite.
  * batch - N examples through the 3-node scripted flow of bench/batch_throughput.py at
    concurrency 1, 8 and 64, instant model, on both stores (best of --repeat): examples/s, ratio.
  * replicas - two `flowstudio serve` replicas on one PostgreSQL (lease --lease-s), --runs
    background runs of a scripted three-node flow sent round-robin, the first replica killed with
    SIGKILL once half are sent (the rest go to the other): runs finished and lost, finished steps run twice (counted from the
    store), the time from the kill to the first run taken over (its first step after the kill that
    the survivor started, read from the store's timestamps, so sending the rest does not delay the
    measure) and to the last run finished.

A PostgreSQL 15 cluster is started in a temp dir (tests/pgserver.py) unless --url names one.

Run (from the repository root):
    .venv/bin/python bench/postgres.py [--examples 300] [--runs 400] [--repeat 2] [--url postgresql://...]
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "bench"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from batch_throughput import _timed as _batch_timed  # noqa: E402
from batch_throughput import _write as _batch_flow  # noqa: E402
from durable import STEPS, _timed  # noqa: E402
from engine_overhead import Noop, chain_flow  # noqa: E402

from studio.flow.spec import load_flow_text  # noqa: E402
from studio.runtime import registry  # noqa: E402
from studio.runtime.compiler import compile_flow  # noqa: E402
from studio.runtime.engine import Engine  # noqa: E402
from studio.store import MemoryStore, SQLiteStore  # noqa: E402
from studio.store.base import now  # noqa: E402
from studio.store.postgres import PostgresStore  # noqa: E402
from tests import pgserver  # noqa: E402

FLOWSTUDIO = str(Path(sys.executable).parent / "flowstudio")
SERVED = """flowstudio: 1
name: three
inputs: {topic: {type: str}}
outputs: {final: $third.text}
models:
  default:
    model: scripted
    script:
      - {match: "^first", reply: "one", delay_s: 0.2}
      - {match: "^second", reply: "two", delay_s: 0.2}
      - {match: "^third", reply: "three", delay_s: 0.2}
nodes:
  first: {type: llm.generate, cache: false, inputs: {topic: $inputs.topic}, config: {prompt: "first {{ topic }}"}}
  second: {type: llm.generate, cache: false, inputs: {before: $first.text}, config: {prompt: "second {{ before }}"}}
  third: {type: llm.generate, cache: false, inputs: {before: $second.text}, config: {prompt: "third {{ before }}"}}
"""


def _database(server: pgserver.PgServer | None, url: str | None) -> str:
    if server is not None:
        return server.new_database()
    assert url is not None
    return url


async def durable(tmp: Path, new_db: Any) -> dict[str, float]:
    plan = compile_flow(load_flow_text(chain_flow(STEPS)))
    memory = min([await _timed(Engine(MemoryStore()), plan) for _ in range(3)])
    sqlite_store = SQLiteStore(tmp / "ckpt.db")
    sqlite = min([await _timed(Engine(sqlite_store), plan) for _ in range(3)])
    sqlite_store.close()
    pg_store = PostgresStore(new_db())
    postgres = min([await _timed(Engine(pg_store), plan) for _ in range(3)])
    pg_store.close()
    return {
        "memory_ms_per_step": round(memory / STEPS * 1e3, 4),
        "sqlite_ms_per_step": round(sqlite / STEPS * 1e3, 4),
        "postgres_ms_per_step": round(postgres / STEPS * 1e3, 4),
        "sqlite_checkpoint_ms_per_step": round((sqlite - memory) / STEPS * 1e3, 4),
        "postgres_checkpoint_ms_per_step": round((postgres - memory) / STEPS * 1e3, 4),
        "postgres_over_sqlite": round(postgres / sqlite, 2),
    }


async def batch(tmp: Path, new_db: Any, examples: int, repeat: int) -> list[dict[str, Any]]:
    options = _batch_flow(tmp, examples, 0.0)
    rows = []
    for concurrency in (1, 8, 64):
        t_sqlite, t_pg, transactions = float("inf"), float("inf"), 0
        for attempt in range(repeat):
            sqlite_store = SQLiteStore(tmp / f"b-{concurrency}-{attempt}.db")
            t_sqlite = min(t_sqlite, (await _batch_timed(options, sqlite_store, concurrency))[0])
            sqlite_store.close()
            pg_store = PostgresStore(new_db())
            t_pg = min(t_pg, (await _batch_timed(options, pg_store, concurrency))[0])
            transactions = pg_store.writer.transactions if pg_store.writer else 0
            pg_store.close()
        rows.append(
            {
                "concurrency": concurrency,
                "sqlite_examples_per_s": round(examples / t_sqlite, 1),
                "postgres_examples_per_s": round(examples / t_pg, 1),
                "postgres_over_sqlite": round(t_sqlite / t_pg, 2),
                "postgres_group_commit_transactions": transactions,
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def _replica(flows: Path, url: str, lease_s: float) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "FLOWSTUDIO_LEASE_S": str(lease_s)}
    command = [FLOWSTUDIO, "serve", str(flows), "--port", "0", "--db", url]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        found = re.search(r"at (http://127\.0\.0\.1:\d+)", line)
        if found:
            return process, found.group(1)
    raise RuntimeError("a replica did not start")


def _seconds(since: str, until: str) -> float:
    """Seconds between two of the store's ISO timestamps."""
    return (dt.datetime.fromisoformat(until) - dt.datetime.fromisoformat(since)).total_seconds()


def _scalar(url: str, sql: str) -> Any:
    with psycopg.connect(url) as conn:
        row = conn.execute(sql).fetchone()
        return row[0] if row else None


def replicas(tmp: Path, url: str, runs: int, lease_s: float) -> dict[str, Any]:
    flows = tmp / "served"
    flows.mkdir()
    (flows / "three.yaml").write_text(SERVED)
    (first, first_url), (second, second_url) = _replica(flows, url, lease_s), _replica(flows, url, lease_s)
    killed_at, killed_wall, client = 0.0, "", httpx.Client(timeout=60)
    try:
        for n in range(runs):
            target = second_url if killed_at or n % 2 else first_url  # round-robin while both live
            answer = client.post(
                f"{target}/flows/three/runs", json={"inputs": {"topic": f"t{n}"}, "mode": "background"}
            )
            answer.raise_for_status()
            if n == runs // 2:
                os.kill(first.pid, signal.SIGKILL)
                first.wait()
                killed_at, killed_wall = time.monotonic(), now()
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if _scalar(url, "SELECT count(*) FROM runs WHERE status = 'succeeded'") == runs:
                break
            time.sleep(0.1)
        resumed = _scalar(
            url,
            "SELECT min(s.started_at) FROM steps s JOIN serve_queue q USING (run_id)"
            f" WHERE q.claims > 1 AND s.started_at > '{killed_wall}'",
        )
        took_over = _seconds(killed_wall, resumed) if resumed else None
        finished_s = _seconds(killed_wall, _scalar(url, "SELECT max(ended_at) FROM runs"))
    finally:
        client.close()
        for process in (first, second):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=30)
    twice = _scalar(
        url,
        "SELECT count(*) FROM (SELECT run_id, node FROM steps WHERE status = 'succeeded'"
        " GROUP BY run_id, node HAVING count(*) > 1) AS t",
    )
    finished = _scalar(url, "SELECT count(*) FROM runs WHERE status = 'succeeded'")
    return {
        "runs_sent": runs,
        "runs_finished": finished,
        "runs_lost": runs - finished,
        "finished_steps_run_twice": twice,
        "runs_taken_over": _scalar(url, "SELECT count(*) FROM serve_queue WHERE claims > 1"),
        "lease_s": lease_s,
        "first_takeover_s_after_kill": round(took_over, 2) if took_over is not None else None,
        "all_finished_s_after_kill": round(finished_s, 2),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--lease-s", type=float, default=3.0)
    parser.add_argument("--url", help="An existing database to use (emptied tables are not assumed).")
    args = parser.parse_args()
    registry.register("bench.noop", Noop)
    server = None if args.url else pgserver.start(pgserver.pg_bin() or Path("/usr/lib/postgresql/15/bin"))
    try:
        with tempfile.TemporaryDirectory() as folder:
            tmp = Path(folder)

            def new_db() -> str:
                return _database(server, args.url)

            figures = {
                "durable": await durable(tmp, new_db),
                "batch": await batch(tmp, new_db, args.examples, args.repeat),
            }
            print(json.dumps(figures["durable"]), file=sys.stderr)
            figures["replicas"] = replicas(tmp, new_db(), args.runs, args.lease_s)
    finally:
        if server is not None:
            server.stop()
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
