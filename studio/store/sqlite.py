"""The SQLite store: WAL, synchronous=FULL, BEGIN IMMEDIATE, one transaction per step (or per group-commit batch)."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

from studio.store.base import (
    CallRecord,
    ExperimentRecord,
    IdKind,
    RunFilter,
    RunRecord,
    RunStatus,
    StepRecord,
    this_host,
)
from studio.store.feedback import SQLiteFeedback
from studio.store.feedback import migrate as _migrate_v6
from studio.store.group import GroupWriter, Write
from studio.store.light import sqlite_utils
from studio.store.rows import (
    CACHED_STATEMENTS,
    COLUMNS,
    LIVE,
    EndRun,
    InsertRun,
    InsertStep,
    PutCache,
    apply_rows,
    ended,
    experiment_from_row,
    from_row,
    run_where,
)
from studio.store.rows import values as row_values
from studio.store.versions import SQLiteVersions
from studio.store.versions import migrate as _migrate_v5
from studio.store.versions import migrate_author as _migrate_v7

SCHEMA_VERSION = 6
"""The schema `MIGRATIONS` bring a store to (PRAGMA user_version)."""
BUSY_TIMEOUT_MS = 30_000


def _migrate_v1(db: sqlite_utils.Database) -> None:
    db.table("runs").create(
        {
            "run_id": str, "flow": str, "flow_path": str, "flow_hash": str, "flow_text": str,
            "inputs": str, "status": str, "outputs": str, "error": str, "tokens": int,
            "cost_usd": float, "steps": int, "started_at": str, "ended_at": str,
            "parent_run_id": str, "experiment_id": str, "options": str,
        },
        pk="run_id",
    )  # fmt: skip
    db.table("runs").create_index(["started_at"])
    db.table("runs").create_index(["flow", "started_at"])
    db.table("steps").create(
        {
            "id": int, "run_id": str, "node": str, "status": str, "inputs": str, "outputs": str,
            "error": str, "error_kind": str, "attempt": int, "tokens": int, "cost_usd": float,
            "started_at": str, "ended_at": str, "cached": int, "reused": int,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "run_id")],
    )  # fmt: skip
    db.table("steps").create_index(["run_id", "id"])
    db.table("llm_calls").create(
        {
            "id": int, "run_id": str, "step_id": int, "node": str, "model": str, "request": str,
            "response": str, "input_tokens": int, "output_tokens": int, "cost_usd": float,
            "latency_s": float, "cache_hit": int, "error": str, "started_at": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "run_id")],
    )  # fmt: skip
    db.table("llm_calls").create_index(["run_id", "id"])
    db.table("cache").create({"key": str, "model": str, "response": str, "created_at": str}, pk="key")
    db.table("experiments").create(
        {"experiment_id": str, "kind": str, "flow": str, "created_at": str, "config": str, "summary": str},
        pk="experiment_id",
    )


def _migrate_v2(db: sqlite_utils.Database) -> None:
    """Experiments list their runs by id: index it."""
    db.table("runs").create_index(["experiment_id", "started_at"], if_not_exists=True)


def _migrate_v3(db: sqlite_utils.Database) -> None:
    """Model calls say which attempt they were and how long they waited before going out."""
    db.execute("ALTER TABLE llm_calls ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1")
    db.execute("ALTER TABLE llm_calls ADD COLUMN wait_s REAL NOT NULL DEFAULT 0")


def _migrate_v4(db: sqlite_utils.Database) -> None:
    """A run keeps the process running it (pid and host), so a run whose process is gone reads `interrupted`."""
    db.execute("ALTER TABLE runs ADD COLUMN pid INTEGER")
    db.execute("ALTER TABLE runs ADD COLUMN host TEXT")


MIGRATIONS = [_migrate_v1, _migrate_v2, _migrate_v3, _migrate_v4, _migrate_v5, _migrate_v6, _migrate_v7]


def connect(path: str | Path, *, cached_statements: int = 128) -> sqlite3.Connection:
    """A connection in autocommit mode with the pragmas every writer needs."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(
        str(path),
        isolation_level=None,
        timeout=BUSY_TIMEOUT_MS / 1000,
        check_same_thread=False,
        cached_statements=cached_statements,
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    _wal(conn)
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL, retrying for up to the busy timeout: when several processes open a new store at
    once, one switches the file while the others' switch fails at once with "database is locked",
    since SQLite does not call the busy handler there."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _to_row(record: RunRecord | StepRecord | CallRecord) -> dict[str, Any]:
    return dict(zip(COLUMNS[type(record)], row_values(record), strict=True))


def _insert(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> int:
    columns = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    cursor = conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", list(row.values()))
    return int(cursor.lastrowid or 0)


class SQLiteStore(SQLiteVersions, SQLiteFeedback):
    """The default store: one file, many processes, crash-safe.

    Each write below is one transaction. The engine's writes (`studio.store.recorder`) go
    through one group-commit writer per store instead (see `studio.store.group`), so concurrent
    runs share its transactions; with `group_commit=False` they are these writes too.
    """

    def __init__(self, path: str | Path, *, group_commit: bool = True) -> None:
        self.path = Path(path)
        self.conn = connect(self.path)
        self.db = sqlite_utils.Database(self.conn)
        self._migrate()
        writer_connect = partial(connect, cached_statements=CACHED_STATEMENTS)
        self.writer = GroupWriter(self.path, writer_connect, apply_rows) if group_commit else None
        """The group-commit writer; None when every write is its own transaction."""

    def _migrate(self) -> None:
        with self.transaction():
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
            for number in range(version, len(MIGRATIONS)):
                MIGRATIONS[number](self.db)
                self.conn.execute(f"PRAGMA user_version = {number + 1}")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction taken with BEGIN IMMEDIATE (no upgrade deadlocks)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def _write(self, write: Write) -> Any:
        with self.transaction() as conn:
            return write(conn)

    def create_run(self, run: RunRecord, flow_text: str | None = None) -> None:
        self._write(InsertRun.of(run, flow_text))

    def finish_step(self, run_id: str, step: StepRecord, calls: list[CallRecord]) -> None:
        self._write(InsertStep.of(run_id, step, calls))

    def finish_run(
        self, run_id: str, *, status: RunStatus, outputs: dict[str, Any] | None, error: str | None
    ) -> RunRecord:
        return ended(run_id, self._write(EndRun.of(run_id, status, outputs, error)))

    def set_status(self, run_id: str, status: RunStatus) -> None:
        with self.transaction():
            self.conn.execute(
                "UPDATE runs SET status = ?, ended_at = NULL, pid = ?, host = ? WHERE run_id = ?",
                (status, os.getpid(), this_host(), run_id),
            )

    def cache_get(self, key: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT response FROM cache WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def cache_put(self, key: str, model: str, response: dict[str, Any]) -> None:
        self._write(PutCache.of(key, model, response))

    def get_run(self, run_id: str) -> RunRecord | None:
        rows = list(self.db.query("SELECT * FROM runs WHERE run_id = ?", [run_id]))
        return from_row(RunRecord, rows[0]) if rows else None

    def flow_text(self, run_id: str) -> str | None:
        rows = list(self.db.query("SELECT flow_text FROM runs WHERE run_id = ?", [run_id]))
        return rows[0]["flow_text"] if rows else None

    def steps(self, run_id: str) -> list[StepRecord]:
        rows = self.db.query("SELECT * FROM steps WHERE run_id = ? ORDER BY id", [run_id])
        return [from_row(StepRecord, row) for row in rows]

    def calls(self, run_id: str) -> list[CallRecord]:
        rows = self.db.query("SELECT * FROM llm_calls WHERE run_id = ? ORDER BY id", [run_id])
        return [from_row(CallRecord, row) for row in rows]

    def import_run(
        self, run: RunRecord, flow_text: str | None, steps: list[tuple[StepRecord, list[CallRecord]]]
    ) -> None:
        with self.transaction() as conn:
            _insert(conn, "runs", {**_to_row(run), "flow_text": flow_text})
            for step, calls in steps:
                step_id = _insert(conn, "steps", {"run_id": run.run_id, **_to_row(step)})
                for call in calls:
                    _insert(conn, "llm_calls", {"run_id": run.run_id, "step_id": step_id, **_to_row(call)})

    def create_experiment(self, experiment: ExperimentRecord) -> None:
        row = asdict(experiment)
        row["config"] = json.dumps(row["config"])
        row["summary"] = json.dumps(row["summary"]) if row["summary"] is not None else None
        with self.transaction() as conn:
            _insert(conn, "experiments", row)

    def finish_experiment(self, experiment_id: str, summary: dict[str, Any]) -> ExperimentRecord:
        with self.transaction():
            self.conn.execute(
                "UPDATE experiments SET summary = ? WHERE experiment_id = ?", (json.dumps(summary), experiment_id)
            )
        experiment = self.get_experiment(experiment_id)
        if experiment is None:
            raise KeyError(f"no experiment {experiment_id}")
        return experiment

    def get_experiment(self, experiment_id: str) -> ExperimentRecord | None:
        rows = list(self.db.query("SELECT * FROM experiments WHERE experiment_id = ?", [experiment_id]))
        return experiment_from_row(rows[0]) if rows else None

    def list_experiments(self, *, limit: int = 50, kind: str | None = None) -> list[ExperimentRecord]:
        clause, params = ("WHERE kind = ?", [kind]) if kind is not None else ("", [])
        sql = f"SELECT * FROM experiments {clause} ORDER BY created_at DESC LIMIT ?"
        return [experiment_from_row(row) for row in self.db.query(sql, [*params, limit])]

    def runs_of_experiment(self, experiment_id: str) -> list[RunRecord]:
        sql = "SELECT * FROM runs WHERE experiment_id = ? ORDER BY started_at, rowid"
        return [from_row(RunRecord, row) for row in self.db.query(sql, [experiment_id])]

    def ids_with_prefix(self, kind: IdKind, prefix: str, limit: int = 3) -> list[str]:
        table, column = ("runs", "run_id") if kind == "run" else ("experiments", "experiment_id")
        sql = f"SELECT {column} FROM {table} WHERE substr({column}, 1, ?) = ? ORDER BY {column} LIMIT ?"
        return [row[0] for row in self.conn.execute(sql, (len(prefix), prefix, limit))]

    def query_runs(self, where: RunFilter | None = None, *, offset: int = 0, limit: int = 50) -> list[RunRecord]:
        clause, params = run_where(where, "?", "instr(version, ?) = 1")
        sql = f"SELECT * FROM runs {clause} ORDER BY started_at DESC, rowid DESC"
        if where is not None and where.status in LIVE:  # few rows: told apart once read
            runs = [from_row(RunRecord, row) for row in self.db.query(sql, params)]
            return [run for run in runs if run.status == where.status][offset : offset + limit]
        return [from_row(RunRecord, row) for row in self.db.query(f"{sql} LIMIT ? OFFSET ?", [*params, limit, offset])]

    def count_runs(self, where: RunFilter | None = None) -> int:
        if where is not None and where.status in LIVE:
            return len(self.query_runs(where, limit=1_000_000))
        clause, params = run_where(where, "?", "instr(version, ?) = 1")
        return int(self.conn.execute(f"SELECT count(*) FROM runs {clause}", params).fetchone()[0])

    def flow_names(self) -> list[str]:
        return [row[0] for row in self.conn.execute("SELECT DISTINCT flow FROM runs ORDER BY flow")]

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.conn.close()
