"""The PostgreSQL store: the SQLite store's contract on a server many processes and machines share.

Reads go through a psycopg connection pool (autocommit). The engine's writes (`studio.store.recorder`)
go through one group-commit writer thread per store with its own connection, as with SQLite: the
steps queued while one transaction commits go to the server together, in one transaction, and
each caller's step is durable (the server's `synchronous_commit = on`) before its `finish_step`
returns, so the checkpoint rule holds. The schema is created and migrated on first use, under an
advisory lock so that replicas starting together migrate once.

A run may carry a fence (`PostgresStore.fences`): a check run first in the transaction of every
write of that run, which refuses the write by raising. Serve replicas fence their background
runs with their lease (`studio.serve.ledger`), so a replica that lost a run writes nothing more
for it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import psycopg
from psycopg_pool import ConnectionPool

from studio.errors import InputError
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
from studio.store.group import GroupWriter, Write, _Item
from studio.store.postgres_feedback import MIGRATION as _V3
from studio.store.postgres_feedback import PostgresFeedback
from studio.store.postgres_versions import MIGRATION as _V4
from studio.store.postgres_versions import PostgresVersions
from studio.store.rows import (
    COLUMNS,
    LIVE,
    EndRun,
    InsertRun,
    InsertStep,
    PutCache,
    encode,
    ended,
    experiment_from_row,
    from_row,
    run_where,
)
from studio.store.rows import values as row_values

CONNECT_TIMEOUT_S = 10.0
"""How long opening the store waits for the server."""
MIGRATION_LOCK = 7_246_113_905
"""The advisory lock key taken while the schema is migrated."""

_V1 = """
CREATE TABLE runs (
    seq BIGSERIAL UNIQUE, run_id TEXT PRIMARY KEY, flow TEXT NOT NULL, flow_path TEXT, flow_hash TEXT,
    flow_text TEXT, inputs TEXT, status TEXT NOT NULL, outputs TEXT, error TEXT, tokens BIGINT NOT NULL DEFAULT 0,
    cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0, steps INTEGER NOT NULL DEFAULT 0, started_at TEXT NOT NULL,
    ended_at TEXT, parent_run_id TEXT, experiment_id TEXT, options TEXT, pid INTEGER, host TEXT);
CREATE INDEX runs_started ON runs (started_at);
CREATE INDEX runs_flow ON runs (flow, started_at);
CREATE INDEX runs_experiment ON runs (experiment_id, started_at);
CREATE TABLE steps (
    id BIGSERIAL PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs, node TEXT NOT NULL, status TEXT NOT NULL,
    inputs TEXT, outputs TEXT, error TEXT, error_kind TEXT, attempt INTEGER, tokens BIGINT,
    cost_usd DOUBLE PRECISION, started_at TEXT, ended_at TEXT, cached INTEGER, reused INTEGER);
CREATE INDEX steps_run ON steps (run_id, id);
CREATE TABLE llm_calls (
    id BIGSERIAL PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs, step_id BIGINT, node TEXT, model TEXT,
    request TEXT, response TEXT, input_tokens BIGINT, output_tokens BIGINT, cost_usd DOUBLE PRECISION,
    latency_s DOUBLE PRECISION, cache_hit INTEGER, error TEXT, started_at TEXT,
    attempt INTEGER NOT NULL DEFAULT 1, wait_s DOUBLE PRECISION NOT NULL DEFAULT 0);
CREATE INDEX llm_calls_run ON llm_calls (run_id, id);
CREATE TABLE cache (key TEXT PRIMARY KEY, model TEXT, response TEXT, created_at TEXT);
CREATE TABLE experiments (
    seq BIGSERIAL UNIQUE, experiment_id TEXT PRIMARY KEY, kind TEXT NOT NULL, flow TEXT NOT NULL,
    created_at TEXT NOT NULL, config TEXT, summary TEXT);
"""
_V2 = """
CREATE TABLE blobs (hash TEXT PRIMARY KEY, data BYTEA NOT NULL);
CREATE TABLE versions (seq BIGSERIAL UNIQUE, version_id TEXT PRIMARY KEY, flow TEXT NOT NULL, entry TEXT NOT NULL,
    files TEXT NOT NULL, note TEXT, created_at TEXT NOT NULL);
CREATE INDEX versions_flow ON versions (flow, created_at);
CREATE TABLE tags (flow TEXT NOT NULL, tag TEXT NOT NULL, version_id TEXT NOT NULL REFERENCES versions,
    moved_at TEXT NOT NULL, PRIMARY KEY (flow, tag));
ALTER TABLE runs ADD COLUMN version TEXT;
CREATE INDEX runs_version ON runs (version, started_at);
"""
MIGRATIONS = [_V1, _V2, _V3, _V4]
"""Schema versions in order: v1 is SQLite's v1-v4 at once, v2 its v5 (versions, tags, blobs), v3 its v6
(feedback), v4 its v7 (who published a version)."""
SCHEMA_VERSION = len(MIGRATIONS)

Fence = Callable[[psycopg.Connection[Any]], None]
"""A check run inside a write's transaction before the write; it refuses the write by raising."""

_RUN_COLUMNS = (*COLUMNS[RunRecord], "flow_text")
_STEP_COLUMNS = ("run_id", *COLUMNS[StepRecord])
_CALL_COLUMNS = ("run_id", "step_id", *COLUMNS[CallRecord])


def is_postgres_url(value: str | Path) -> bool:
    """Whether a `--db` value names a PostgreSQL server rather than a SQLite file."""
    return isinstance(value, str) and value.startswith(("postgresql://", "postgres://"))


def shown_url(url: str) -> str:
    """The URL without its password, for messages."""
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)


def _sql(head: str, columns: Sequence[str]) -> str:
    return f"{head} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))})"


def apply_write(conn: psycopg.Connection[Any], write: Any) -> Any:
    """Run one engine write (`studio.store.rows`) on `conn`, inside the caller's transaction."""
    if isinstance(write, InsertRun):
        conn.execute(_sql("INSERT INTO runs", _RUN_COLUMNS), write.row)
    elif isinstance(write, InsertStep):
        _insert_step(conn, write)
    elif isinstance(write, EndRun):
        sql = (
            "UPDATE runs SET status = %s, outputs = %s, error = %s, ended_at = %s WHERE run_id = %s "
            f"RETURNING {', '.join(COLUMNS[RunRecord])}"
        )
        return conn.execute(sql, (write.status, write.outputs, write.error, write.ended_at, write.run_id)).fetchone()
    elif isinstance(write, PutCache):
        conn.execute(
            _sql("INSERT INTO cache", ("key", "model", "response", "created_at"))
            + " ON CONFLICT (key) DO UPDATE SET model = excluded.model, response = excluded.response,"
            " created_at = excluded.created_at",
            write.row,
        )
    else:
        return write(conn)
    return None


def _insert_step(conn: psycopg.Connection[Any], write: InsertStep) -> None:
    row = conn.execute(_sql("INSERT INTO steps", _STEP_COLUMNS) + " RETURNING id", (write.run_id, *write.row))
    step_id = cast(tuple[int], row.fetchone())[0]
    if write.calls:
        with conn.cursor() as cursor:
            cursor.executemany(
                _sql("INSERT INTO llm_calls", _CALL_COLUMNS), [(write.run_id, step_id, *call) for call in write.calls]
            )
    conn.execute(
        "UPDATE runs SET tokens = tokens + %s, cost_usd = cost_usd + %s, steps = steps + 1 WHERE run_id = %s",
        (write.tokens, write.cost_usd, write.run_id),
    )


def fenced(fences: dict[str, Fence], write: Any) -> Any:
    """`write`, behind its run's fence when the run has one."""
    fence = fences.get(getattr(write, "run_id", None) or "")
    return write if fence is None else Fenced(fence, write)


@dataclass(frozen=True)
class Fenced:
    """A write of a fenced run: the run's fence, then the write, in one transaction."""

    fence: Fence
    write: Any

    def __call__(self, conn: psycopg.Connection[Any]) -> Any:
        self.fence(conn)
        return apply_write(conn, self.write)


class PostgresWriter(GroupWriter):
    """The group-commit writer on a PostgreSQL connection: each batch one transaction (one WAL flush).

    A write of a run that has a fence (`fences`, the store's) passes it first, in its transaction."""

    def __init__(self, connect: Callable[[Path], Any], fences: dict[str, Fence]) -> None:
        super().__init__(Path("postgres"), connect)
        self.fences = fences

    def _open_turns(self) -> int | None:
        """None: PostgreSQL's own locks order the replicas' transactions (no lock file)."""
        return None

    async def write(self, write: Write) -> Any:
        """`GroupWriter.write`, behind the write's fence."""
        return await super().write(fenced(self.fences, write))

    def post(self, write: Write) -> None:
        """`GroupWriter.post`, behind the write's fence."""
        super().post(fenced(self.fences, write))

    def _transaction(self, conn: psycopg.Connection[Any], items: list[_Item]) -> None:
        with conn.transaction():
            results = [apply_write(conn, item.write) for item in items]
        for item, result in zip(items, results, strict=True):
            item.result = result


class PostgresStore(PostgresVersions, PostgresFeedback):
    """Runs, steps, calls, the LLM cache and experiments in a PostgreSQL database (`postgresql://...`)."""

    def __init__(self, url: str, *, group_commit: bool = True, pool_size: int = 4) -> None:
        self.url = url
        self.path = shown_url(url)
        """What messages name the store by (the URL without its password)."""
        try:
            psycopg.connect(url, connect_timeout=int(CONNECT_TIMEOUT_S)).close()
        except psycopg.Error as err:
            reason = str(err).strip().splitlines()[-1]
            raise InputError(f"cannot reach PostgreSQL at {self.path}: {reason}", field="--db") from err
        self.pool = ConnectionPool(
            url, min_size=1, max_size=pool_size, kwargs={"autocommit": True}, open=True, name="flowstudio"
        )
        self._migrate()
        self.fences: dict[str, Fence] = {}
        """Per run id: the check each write of that run passes first, in its transaction."""
        connect = cast(Any, lambda _path: psycopg.connect(url, autocommit=True))
        self.writer = PostgresWriter(connect, self.fences) if group_commit else None
        """The group-commit writer (its writes fenced too); None when every write is its own transaction."""

    def _migrate(self) -> None:
        with self.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            conn.execute("CREATE TABLE IF NOT EXISTS flowstudio_schema (version INTEGER NOT NULL)")
            row = conn.execute("SELECT version FROM flowstudio_schema").fetchone()
            version = row[0] if row else 0
            if row is None:
                conn.execute("INSERT INTO flowstudio_schema VALUES (0)")
            for number in range(version, len(MIGRATIONS)):
                conn.execute(cast(Any, MIGRATIONS[number]))
                conn.execute("UPDATE flowstudio_schema SET version = %s", (number + 1,))

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection inside one transaction (committed on exit, rolled back on an error)."""
        with self.pool.connection() as conn, conn.transaction():
            yield conn

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self.pool.connection() as conn, conn.cursor(row_factory=psycopg.rows.dict_row) as cursor:
            return cursor.execute(cast(Any, sql), params).fetchall()

    def _write(self, write: Any) -> Any:
        with self.transaction() as conn:
            return apply_write(conn, fenced(self.fences, write))

    def create_run(self, run: RunRecord, flow_text: str | None = None) -> None:
        self._write(InsertRun.of(run, flow_text))

    def finish_step(self, run_id: str, step: StepRecord, calls: list[CallRecord]) -> None:
        self._write(InsertStep.of(run_id, step, calls))

    def finish_run(
        self, run_id: str, *, status: RunStatus, outputs: dict[str, Any] | None, error: str | None
    ) -> RunRecord:
        return ended(run_id, self._write(EndRun.of(run_id, status, outputs, error)))

    def set_status(self, run_id: str, status: RunStatus) -> None:
        with self.transaction() as conn:
            fence = self.fences.get(run_id)
            if fence is not None:
                fence(conn)
            conn.execute(
                "UPDATE runs SET status = %s, ended_at = NULL, pid = %s, host = %s WHERE run_id = %s",
                (status, os.getpid(), this_host(), run_id),
            )

    def cache_get(self, key: str) -> dict[str, Any] | None:
        rows = self._rows("SELECT response FROM cache WHERE key = %s", (key,))
        return json.loads(rows[0]["response"]) if rows else None

    def cache_put(self, key: str, model: str, response: dict[str, Any]) -> None:
        self._write(PutCache.of(key, model, response))

    def get_run(self, run_id: str) -> RunRecord | None:
        rows = self._rows("SELECT * FROM runs WHERE run_id = %s", (run_id,))
        return from_row(RunRecord, rows[0]) if rows else None

    def flow_text(self, run_id: str) -> str | None:
        rows = self._rows("SELECT flow_text FROM runs WHERE run_id = %s", (run_id,))
        return rows[0]["flow_text"] if rows else None

    def steps(self, run_id: str) -> list[StepRecord]:
        rows = self._rows("SELECT * FROM steps WHERE run_id = %s ORDER BY id", (run_id,))
        return [from_row(StepRecord, row) for row in rows]

    def calls(self, run_id: str) -> list[CallRecord]:
        rows = self._rows("SELECT * FROM llm_calls WHERE run_id = %s ORDER BY id", (run_id,))
        return [from_row(CallRecord, row) for row in rows]

    def import_run(
        self, run: RunRecord, flow_text: str | None, steps: list[tuple[StepRecord, list[CallRecord]]]
    ) -> None:
        with self.transaction() as conn:
            conn.execute(_sql("INSERT INTO runs", _RUN_COLUMNS), (*row_values(run), flow_text))
            for step, calls in steps:
                write = InsertStep.of(run.run_id, step, calls)
                row = conn.execute(_sql("INSERT INTO steps", _STEP_COLUMNS) + " RETURNING id", (run.run_id, *write.row))
                step_id = cast(tuple[int], row.fetchone())[0]
                for call in write.calls:
                    conn.execute(_sql("INSERT INTO llm_calls", _CALL_COLUMNS), (run.run_id, step_id, *call))

    def create_experiment(self, experiment: ExperimentRecord) -> None:
        summary = encode(experiment.summary) if experiment.summary is not None else None
        columns = ("experiment_id", "kind", "flow", "created_at", "config", "summary")
        values = (experiment.experiment_id, experiment.kind, experiment.flow, experiment.created_at)
        with self.transaction() as conn:
            conn.execute(_sql("INSERT INTO experiments", columns), (*values, encode(experiment.config), summary))

    def finish_experiment(self, experiment_id: str, summary: dict[str, Any]) -> ExperimentRecord:
        with self.transaction() as conn:
            conn.execute(
                "UPDATE experiments SET summary = %s WHERE experiment_id = %s", (encode(summary), experiment_id)
            )
        experiment = self.get_experiment(experiment_id)
        if experiment is None:
            raise KeyError(f"no experiment {experiment_id}")
        return experiment

    def get_experiment(self, experiment_id: str) -> ExperimentRecord | None:
        rows = self._rows("SELECT * FROM experiments WHERE experiment_id = %s", (experiment_id,))
        return experiment_from_row(rows[0]) if rows else None

    def list_experiments(self, *, limit: int = 50, kind: str | None = None) -> list[ExperimentRecord]:
        clause, params = ("WHERE kind = %s", [kind]) if kind is not None else ("", [])
        sql = f"SELECT * FROM experiments {clause} ORDER BY created_at DESC, seq DESC LIMIT %s"
        return [experiment_from_row(row) for row in self._rows(sql, [*params, limit])]

    def runs_of_experiment(self, experiment_id: str) -> list[RunRecord]:
        sql = "SELECT * FROM runs WHERE experiment_id = %s ORDER BY started_at, seq"
        return [from_row(RunRecord, row) for row in self._rows(sql, (experiment_id,))]

    def ids_with_prefix(self, kind: IdKind, prefix: str, limit: int = 3) -> list[str]:
        table, column = ("runs", "run_id") if kind == "run" else ("experiments", "experiment_id")
        sql = f"SELECT {column} FROM {table} WHERE starts_with({column}, %s) ORDER BY {column} LIMIT %s"
        return [row[column] for row in self._rows(sql, (prefix, limit))]

    def query_runs(self, where: RunFilter | None = None, *, offset: int = 0, limit: int = 50) -> list[RunRecord]:
        clause, params = run_where(where, "%s", "starts_with(version, %s)")
        sql = f"SELECT * FROM runs {clause} ORDER BY started_at DESC, seq DESC"
        if where is not None and where.status in LIVE:  # few rows: told apart once read
            runs = [from_row(RunRecord, row) for row in self._rows(sql, params)]
            return [run for run in runs if run.status == where.status][offset : offset + limit]
        return [from_row(RunRecord, row) for row in self._rows(f"{sql} LIMIT %s OFFSET %s", [*params, limit, offset])]

    def count_runs(self, where: RunFilter | None = None) -> int:
        if where is not None and where.status in LIVE:
            return len(self.query_runs(where, limit=1_000_000))
        clause, params = run_where(where, "%s", "starts_with(version, %s)")
        return int(self._rows(f"SELECT count(*) AS n FROM runs {clause}", params)[0]["n"])

    def flow_names(self) -> list[str]:
        return [row["flow"] for row in self._rows("SELECT DISTINCT flow FROM runs ORDER BY flow")]

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.pool.close()
