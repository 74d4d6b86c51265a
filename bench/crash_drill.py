"""Crash drill: SIGKILL a running flow at random points, resume it, check nothing is lost
or run twice.

Run:  .venv/bin/python bench/crash_drill.py [--trials 200] [--seed 1] [--durability sync|async|exit]
Uses tests/flows/drill.yaml (10 scripted nodes with delays). For each trial: start
`flowstudio run --durability MODE`, wait for its run row, kill it 0-1.6 s later, `flowstudio resume`
it, then compare with the golden outputs and with the scripted model's own ledger of calls (kept
outside the store). Prints one JSON object. What each mode promises (`studio.runtime.durability`):
sync and async lose no finished run's steps and resume the rest; exit leaves an unfinished run no
steps, so its resume starts over.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FLOW = ROOT / "tests" / "flows" / "drill.yaml"
FLOWSTUDIO = str(Path(sys.executable).parent / "flowstudio")
GOLDEN = {"final": "J", "side": "E"}
NODES = "abcdefghij"


def ledger_counts(path: Path) -> Counter[str]:
    """Calls per node as the scripted model itself recorded them (outside the store)."""
    lines = path.read_text().splitlines() if path.exists() else []
    return Counter(json.loads(line)["prompt"].split()[1] for line in lines)


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FLOWSTUDIO, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)


def _wait_for_run(db: Path, process: subprocess.Popen[bytes], limit_s: float = 30.0) -> None:
    """Return once the run row exists (the process has started executing nodes)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if sqlite3.connect(db).execute("SELECT count(*) FROM runs").fetchone()[0]:
                return
        except sqlite3.Error:
            pass
        time.sleep(0.02)


def _wait_for_calls(ledger: Path, calls: int, process: subprocess.Popen[bytes], limit_s: float = 30.0) -> None:
    """Return once the scripted model has answered `calls` calls (or the process ended)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and process.poll() is None:
        if sum(ledger_counts(ledger).values()) >= calls:
            return
        time.sleep(0.005)


def _stored(db: Path) -> tuple[str, str, list[str]] | None:
    """The run's id, its status as written and its succeeded steps' nodes, read straight from the file."""
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT run_id, status FROM runs").fetchone()
        if row is None:
            return None
        steps = conn.execute("SELECT node FROM steps WHERE run_id = ? AND status = 'succeeded'", (row[0],))
        return row[0], row[1], [node for (node,) in steps]
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def trial(
    tmp: Path,
    number: int,
    rng: random.Random,
    durability: str = "sync",
    kill_after_calls: int | None = None,
) -> dict[str, Any]:
    """One kill and resume. The kill lands 0-1.6 s after the run row exists, or, with
    `kill_after_calls`, as soon as the scripted model has answered that many calls."""
    db, ledger = tmp / f"t{number}.db", tmp / f"t{number}.jsonl"
    env = {**os.environ, "FLOWSTUDIO_DB": str(db), "FLOWSTUDIO_SCRIPTED_LEDGER": str(ledger)}
    command = [FLOWSTUDIO, "run", str(FLOW), "-i", "topic=x", "--durability", durability]
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    _wait_for_run(db, process)
    if kill_after_calls is None:
        time.sleep(rng.uniform(0.0, 1.6))
    else:
        _wait_for_calls(ledger, kill_after_calls, process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    stored = _stored(db) if db.exists() else None
    if stored is None:
        return {"killed_before_start": True}
    run_id, status_before, succeeded_before = stored
    done_before = set(succeeded_before)
    calls_before = ledger_counts(ledger)
    if status_before != "succeeded":
        _cli(env, "resume", run_id, "--json")
    calls = ledger_counts(ledger)
    _, status_after, succeeded_after_list = _stored(db) or ("", "", [])
    succeeded_after = set(succeeded_after_list)
    row = sqlite3.connect(db).execute("SELECT outputs FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    outputs = json.loads(row[0]) if row and row[0] else None
    return {
        "killed_before_start": False,
        "durability": durability,
        "status_before_resume": status_before,
        "finished_before_kill": len(done_before),
        "calls_before_kill": sum(calls_before.values()),
        "finished_run_complete": status_before != "succeeded" or done_before == set(NODES),
        "lost_steps": len(done_before - succeeded_after) + len(set(NODES) - succeeded_after),
        "reexecuted_finished": sum(calls[n] - calls_before[n] for n in done_before),
        "interrupted_extra_calls": sum(max(0, calls[n] - 1) for n in set(NODES) - done_before),
        "resumed_from_start": status_before != "succeeded" and not done_before and succeeded_after == set(NODES),
        "status_after": status_after,
        "outputs_equal_golden": outputs == GOLDEN,
        "integrity_ok": sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--durability", choices=["sync", "async", "exit"], default="sync")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    results = []
    with tempfile.TemporaryDirectory() as name:
        for number in range(args.trials):
            results.append(trial(Path(name), number, rng, args.durability))
    started = [r for r in results if not r["killed_before_start"]]
    summary = {
        "durability": args.durability,
        "trials": args.trials,
        "resumed": len(started),
        "killed_before_the_run_existed": args.trials - len(started),
        "lost_steps": sum(r["lost_steps"] for r in started),
        "reexecuted_finished_steps": sum(r["reexecuted_finished"] for r in started),
        "max_extra_calls_of_interrupted_nodes": max((r["interrupted_extra_calls"] for r in started), default=0),
        "finished_runs_incomplete": sum(not r["finished_run_complete"] for r in started),
        "resumed_from_start": sum(r["resumed_from_start"] for r in started),
        "outputs_equal_golden": sum(r["outputs_equal_golden"] for r in started),
        "integrity_ok": sum(r["integrity_ok"] for r in started),
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
