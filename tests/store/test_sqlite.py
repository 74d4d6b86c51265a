"""SQLite specifics: pragmas, schema version, JSON only."""

from __future__ import annotations

import sqlite3
import subprocess
import time
from pathlib import Path

from studio.store import SQLiteStore
from studio.store.base import CallRecord, RunRecord, StepRecord
from studio.store.sqlite import MIGRATIONS
from studio.store.versions import VersionRecord
from tests.conftest import FLOWSTUDIO, ROOT


def test_pragmas_and_schema_version(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db")
    conn = store.conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"runs", "steps", "llm_calls", "cache", "experiments"} <= tables
    store.close()
    SQLiteStore(tmp_path / "a.db").close()  # reopening migrates nothing twice


def test_values_are_stored_as_json_text(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db")
    store.create_run(RunRecord("r", "f", None, "h", {"n": [1, 2]}))
    store.finish_step("r", StepRecord(node="a", status="succeeded", outputs={"text": "<b>hi</b>"}), [])
    store.close()
    raw = sqlite3.connect(tmp_path / "a.db")
    assert raw.execute("SELECT inputs FROM runs").fetchone()[0] == '{"n": [1, 2]}'
    assert raw.execute("SELECT outputs FROM steps").fetchone()[0] == '{"text": "<b>hi</b>"}'


def test_a_version_1_database_is_migrated(tmp_path: Path) -> None:
    import sqlite_utils

    from studio.store.sqlite import connect

    conn = connect(tmp_path / "old.db")
    MIGRATIONS[0](sqlite_utils.Database(conn))
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    store = SQLiteStore(tmp_path / "old.db")
    indexes = {r[1] for r in store.conn.execute("PRAGMA index_list(runs)")}
    assert store.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    store.put_version(VersionRecord("v", "f", "f.yaml", {}, author="ann"), {})
    assert store.get_version("v").author == "ann"  # type: ignore[union-attr]
    assert any("experiment_id" in name for name in indexes)
    store.create_run(RunRecord("r", "f", None, "h", {}))
    call = CallRecord(node="a", model="m", request={}, response=None, error="rate_limit: 429", attempt=2, wait_s=0.5)
    store.finish_step("r", StepRecord(node="a", status="failed"), [call])
    assert [(c.attempt, c.wait_s) for c in store.calls("r")] == [(2, 0.5)]


OPEN = """import sys, time
from studio.store import SQLiteStore
start = float(sys.argv[2])
while time.time() < start:
    pass
SQLiteStore(sys.argv[1]).close()
"""


def test_processes_opening_a_new_store_at_the_same_instant_all_get_it(tmp_path: Path) -> None:
    """The first to switch a new file to WAL holds it; SQLite fails the others' switch at once (no
    busy handler), so each open retries: without that, about one open in nine failed here."""
    python = str(Path(FLOWSTUDIO).parent / "python")
    for attempt in range(6):
        db = tmp_path / f"fresh{attempt}.db"
        start = str(time.time() + 1.5)  # after every interpreter has started
        opens = [
            subprocess.Popen([python, "-c", OPEN, str(db), start], cwd=ROOT, stderr=subprocess.PIPE, text=True)
            for _ in range(6)
        ]
        errors = [process.communicate(timeout=60)[1] for process in opens]
        assert all(process.returncode == 0 for process in opens), errors
