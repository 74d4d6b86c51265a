"""A batch that stops early leaves no run `running` (issue 45, item 4): runs in flight end
`cancelled`, a killed batch's runs read `interrupted` and resume, the first error prints once."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from tests.conftest import CLI, FLOWS, FLOWSTUDIO, ROOT

TRIAGE = str(FLOWS / "ticket-triage.yaml")
DATA = str(FLOWS / "data" / "triage-labelled.jsonl")


def _slow_script(folder: Path) -> str:
    script = folder / "slow.yaml"
    script.write_text('script:\n  - {match: "Label:$", reply: " billing", delay_s: 0.6}\n  - {reply: ok}\n')
    return f"default=scripted/{script}"


def _start_batch(folder: Path, db: Path) -> subprocess.Popen[str]:
    command = [FLOWSTUDIO, "batch", TRIAGE, "--data", DATA, "--expect", "category=category"]
    command += ["--model", _slow_script(folder), "--concurrency", "3", "--json"]
    environment = {**os.environ, "FLOWSTUDIO_DB": str(db)}
    return subprocess.Popen(
        command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_default_sigint,
    )  # fmt: skip


def _default_sigint() -> None:
    """Ctrl-C as a terminal delivers it, even when pytest itself runs in a background job (where a
    shell starts it with SIGINT ignored, and Python keeps an ignored SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_finished_runs(db: Path, count: int, deadline_s: float = 60) -> None:
    """Until `count` runs have ended and others are in flight (read straight from the file)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if db.exists():
            try:
                with sqlite3.connect(db) as conn:
                    rows = conn.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall()
            except sqlite3.OperationalError:
                rows = []
            found = dict(rows)
            if found.get("succeeded", 0) >= count and found.get("running", 0) > 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"the batch did not get going: {db}")


def _statuses(cli: CLI) -> dict[str, int]:
    listed = cli("runs", "--json", "--limit", "500")
    assert listed.code == 0, listed.err
    found: dict[str, int] = {}
    for run in listed.json():
        found[run["status"]] = found.get(run["status"], 0) + 1
    return found


def test_a_killed_batch_leaves_its_runs_interrupted_and_they_resume(cli: CLI, tmp_path: Path) -> None:
    db = tmp_path / "flowstudio.db"
    batch = _start_batch(tmp_path, db)
    _wait_for_finished_runs(db, 2)
    batch.send_signal(signal.SIGKILL)
    batch.wait(timeout=30)
    statuses = _statuses(cli)
    assert "running" not in statuses and statuses.get("interrupted", 0) >= 1, statuses
    table = cli("runs", env={"COLUMNS": "80"}).out
    assert "interrupted" in table and max(len(line) for line in table.splitlines()) <= 80, table
    assert not any(line.strip() in ("e", "riage", "iage") for line in table.splitlines()), "never inside a word"
    interrupted = cli("runs", "--status", "interrupted", "--json").json()
    assert interrupted and all(r["status"] == "interrupted" for r in interrupted)
    resumed = cli("resume", interrupted[0]["run_id"][:8], "--json")
    assert resumed.code == 0, resumed.err
    assert resumed.json()["status"] == "succeeded"


def test_ctrl_c_cancels_the_runs_in_flight_and_says_how_to_continue(cli: CLI, tmp_path: Path) -> None:
    db = tmp_path / "flowstudio.db"
    batch = _start_batch(tmp_path, db)
    _wait_for_finished_runs(db, 2)
    batch.send_signal(signal.SIGINT)
    _, err = batch.communicate(timeout=60)
    assert batch.returncode == 130, err
    assert "interrupted: the runs in flight are cancelled; continue with: flowstudio batch --resume" in err
    assert "Traceback" not in err
    statuses = _statuses(cli)
    assert "running" not in statuses and "interrupted" not in statuses, statuses
    assert statuses.get("cancelled", 0) >= 1, statuses


def test_a_batch_that_stops_early_cancels_its_runs_in_flight_and_prints_the_error_once(
    cli: CLI, tmp_path: Path
) -> None:
    script = tmp_path / "auth.yaml"
    script.write_text("script:\n  - {error: {kind: auth}}\n")
    model = f"default=scripted/{script}"
    result = cli("batch", TRIAGE, "--data", DATA, "--expect", "category=category", "--model", model, env={"COLUMNS": "200"})  # fmt: skip
    assert result.code == 1
    errors = [line for line in result.out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.out
    assert errors[0].startswith("error: row 1: ") and "auth" in errors[0]
    assert "(and 7 more rows with this error)" in " ".join(result.out.split())
    statuses = _statuses(cli)
    assert "running" not in statuses, statuses
    assert statuses == {"failed": 8, "cancelled": statuses.get("cancelled", 0)} and statuses["cancelled"] >= 1
    assert json.loads(cli("experiments", "--json").out)[0]["status"] == "unfinished"  # so --resume continues it
