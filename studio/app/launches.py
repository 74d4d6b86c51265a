"""Batches and searches started from the studio: each runs as its own process
(`python -m studio batch|optimize ... --json`), detached in a new session so it outlives the
page and the browser. The process writes its progress to the experiment's summary
(`studio.evaluate.live`); a small launch file next to the database keeps its pid, command and
log, so a launch that fails before its experiment exists still shows why.

State is always derived from the store and the process table, never from the page's session.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from studio.evaluate.live import LAUNCH_ENV
from studio.store.base import ExperimentRecord, RunFilter, Store, new_id, now, process_exists

State = Literal["starting", "running", "finished", "stopped", "failed", "unfinished"]
"""`unfinished`: no summary and no process the studio started (a terminal batch, running or killed)."""
LOG_TAIL = 2000
STOP_WAIT_S = 3.0
"""How long Stop waits for the process to end before it records the runs it left unfinished."""
BUDGET_REFUSED = re.compile(r"a budget of (\d+) calls is too small.*?give --budget-calls (\d+) or more", re.S)
"""How `flowstudio optimize` refuses a budget that cannot try one candidate (studio.optimize.options)."""
STOPPED_ERROR = "stopped from the studio before it finished"
"""The error a run in flight when its batch was stopped ends with (status `cancelled`)."""


@dataclass
class Launch:
    """One process the studio started."""

    token: str
    """Ties the process to its experiment (the summary's `launch`)."""
    kind: str
    """`batch` or `optimize`."""
    flow: str
    """The flow file."""
    pid: int
    """The process id (also its process group: it leads a new session)."""
    argv: list[str] = field(default_factory=list)
    """The command line."""
    log: str = ""
    """Where its stdout and stderr go."""
    started_at: str = field(default_factory=now)
    """ISO 8601, UTC."""


def launch_dir(db: Path | str) -> Path:
    """Where launches are recorded: beside a SQLite file; under `.flowstudio/` for a PostgreSQL URL."""
    if isinstance(db, str):
        return Path.cwd() / ".flowstudio" / "postgres.launches"
    return db.parent / f"{db.name}.launches"


def start(db: Path | str, kind: str, flow: str, args: list[str], *, cwd: Path | None = None) -> Launch:
    """Start `flowstudio KIND FLOW ARGS --json --db DB` in its own session; returns its record."""
    token = new_id()
    folder = launch_dir(db)
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"{token}.log"
    argv = [sys.executable, "-m", "studio", kind, flow, *args, "--json", "--db", str(db)]
    env = {**os.environ, LAUNCH_ENV: token}
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=cwd,
            start_new_session=True,
        )  # fmt: skip
    record = Launch(token=token, kind=kind, flow=flow, pid=process.pid, argv=argv, log=str(log))
    (folder / f"{token}.json").write_text(json.dumps(asdict(record)), encoding="utf-8")
    return record


def args_of(launch: Launch) -> list[str]:
    """The arguments `start` was given (the command line without its program, kind, flow and store)."""
    return launch.argv[5:-3] if len(launch.argv) >= 8 else []


def with_budget(args: list[str], calls: int) -> list[str]:
    """`args` with `--budget-calls` set to `calls`."""
    if "--budget-calls" in args:
        at = args.index("--budget-calls") + 1
        return [*args[:at], str(calls), *args[at + 1 :]]
    return [*args, "--budget-calls", str(calls)]


def budget_refusal(launch: Launch) -> tuple[int, int] | None:
    """(the budget given, the calls needed) when the launch was refused because its budget cannot try
    even one candidate; None otherwise."""
    found = BUDGET_REFUSED.search(log_tail(launch))
    return (int(found.group(1)), int(found.group(2))) if found else None


def forget(db: Path | str, launch: Launch) -> None:
    """Remove a launch's record and log (one replaced by a new start)."""
    folder = launch_dir(db)
    for path in (folder / f"{launch.token}.json", Path(launch.log)):
        if path.parent == folder:
            path.unlink(missing_ok=True)


def launches(db: Path | str) -> list[Launch]:
    """Every launch recorded next to `db`, newest first."""
    folder = launch_dir(db)
    if not folder.is_dir():
        return []
    found = []
    for path in folder.glob("*.json"):
        try:
            found.append(Launch(**json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError):
            continue
    return sorted(found, key=lambda launch: launch.started_at, reverse=True)


def alive(pid: int | None) -> bool:
    """Whether `pid` is a live process (a zombie is reaped and counts as gone)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass  # not our child (started before a reload of the server): ask the process table
    if not process_exists(pid):
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def state(experiment: ExperimentRecord, launch: Launch | None = None) -> State:
    """What an experiment is doing, from its stored summary and whether its process lives."""
    summary = experiment.summary
    if summary is None:
        if launch is None:
            return "unfinished"
        return "starting" if alive(launch.pid) else "failed"
    status = summary.get("status")
    if status == "running":
        pid = summary.get("pid") or (launch.pid if launch else None)
        return "running" if pid is None or alive(pid) else "failed"
    if status in ("stopped", "interrupted"):
        return "stopped"
    if status == "failed":
        return "failed"
    return "finished"


def by_token(db: Path | str) -> dict[str, Launch]:
    return {launch.token: launch for launch in launches(db)}


def launch_of(experiment: ExperimentRecord, known: dict[str, Launch]) -> Launch | None:
    token = (experiment.summary or {}).get("launch")
    return known.get(token) if isinstance(token, str) else None


def pending(db: Path | str, experiments: list[ExperimentRecord]) -> list[tuple[Launch, State]]:
    """Launches that have no experiment yet: still starting, or failed before making one."""
    tied = {(e.summary or {}).get("launch") for e in experiments}
    return [
        (launch, "starting" if alive(launch.pid) else "failed") for launch in launches(db) if launch.token not in tied
    ]


def log_tail(launch: Launch) -> str:
    try:
        text = Path(launch.log).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return text[-LOG_TAIL:]


def cancel(store: Store, experiment: ExperimentRecord, launch: Launch | None = None) -> None:
    """Stop the experiment's process group and record it as stopped; the runs it had in flight end
    as `cancelled` (a `--resume` runs their examples again)."""
    summary = experiment.summary or {}
    pid = summary.get("pid") or (launch.pid if launch else None)
    if isinstance(pid, int) and alive(pid):
        _terminate(pid)
    fresh = store.get_experiment(experiment.experiment_id)  # the process may have written since the page read it
    summary = (fresh.summary if fresh is not None else None) or summary
    stopped = {**summary, "status": "stopped", "stopped_at": now()}
    if experiment.kind != "optimize":  # the examples that finished, not the last progress write
        stopped["done"] = store.count_runs(RunFilter(experiment_id=experiment.experiment_id, status="succeeded"))
        stopped["done"] += store.count_runs(RunFilter(experiment_id=experiment.experiment_id, status="failed"))
        _cancel_in_flight(store, experiment.experiment_id)
    store.finish_experiment(experiment.experiment_id, stopped)


def _terminate(pid: int) -> None:
    """SIGTERM the process (its whole group when it leads one) and wait a little for it to end."""
    try:
        if os.getpgid(pid) == pid:  # it leads its own group (the studio started it): stop it all
            os.killpg(pid, signal.SIGTERM)
        else:
            os.kill(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + STOP_WAIT_S
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def _cancel_in_flight(store: Store, experiment_id: str) -> None:
    """End the experiment's runs still marked `running`: their process is gone, they will not finish
    (so the store reads them `interrupted`)."""
    for status in ("running", "interrupted"):
        for run in store.query_runs(RunFilter(experiment_id=experiment_id, status=status), limit=10_000):
            store.finish_run(run.run_id, status="cancelled", outputs=None, error=STOPPED_ERROR)


def progress(experiment: ExperimentRecord) -> dict[str, Any]:
    """The live fields of a running experiment's summary, for the progress line."""
    summary = experiment.summary or {}
    keys = ("done", "total", "score", "best_dev", "calls", "budget_calls", "cost_usd", "eta_s", "elapsed_s")
    return {k: summary[k] for k in keys if summary.get(k) is not None}
