"""A run left `running` by a process that is gone reads `interrupted` (issue 45, item 4)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from studio.store import SQLiteStore
from studio.store.base import RunFilter, RunRecord


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_a_run_whose_process_is_gone_reads_interrupted_and_filters_by_it(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    store.create_run(RunRecord("gone", "f", None, "h", {}, pid=_dead_pid()))
    store.create_run(RunRecord("alive", "f", None, "h", {}))
    store.create_run(RunRecord("elsewhere", "f", None, "h", {}, pid=_dead_pid(), host="another-host"))
    store.create_run(RunRecord("old", "f", None, "h", {}, pid=None, host=None))
    gone = store.get_run("gone")
    assert gone is not None and gone.status == "interrupted"
    assert [r.run_id for r in store.query_runs(RunFilter(status="interrupted"))] == ["gone"]
    assert {r.run_id for r in store.query_runs(RunFilter(status="running"))} == {"alive", "elsewhere", "old"}
    assert store.count_runs(RunFilter(status="interrupted")) == 1
    assert store.count_runs(RunFilter(status="running")) == 3
    store.set_status("gone", "running")  # what a resume does: this process runs it now
    again = store.get_run("gone")
    assert again is not None and again.status == "running"
    store.close()
