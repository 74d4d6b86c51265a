"""Copy a SQLite store into a PostgreSQL one (`flowstudio db migrate`), then check the counts.

Runs go over whole, each with its steps and their model calls in one transaction
(`import_run`), so a copy stopped half-way leaves whole runs; a second copy skips the runs the
target already has. Then the cache, the experiments and the published versions. The check
counts each table's rows in the source and, in the target, the rows of the source's runs.
Cascades' teacher answers and decisions go over too (not counted: a store may not have them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from studio.store.base import CallRecord, RunRecord, StepRecord
from studio.store.postgres import PostgresStore
from studio.store.postgres_teacher import PostgresBook
from studio.store.recorder import Recorder
from studio.store.rows import experiment_from_row, from_row
from studio.store.sqlite import SQLiteStore
from studio.store.teacher import SQLiteBook, TeacherBook

TABLES = ("runs", "steps", "llm_calls", "cache", "experiments", "versions", "feedback")
"""What is copied and counted."""


@dataclass(frozen=True)
class Count:
    """One table's rows in the source and in the target."""

    table: str
    """The table's name."""
    source: int
    """Rows in the SQLite store."""
    target: int
    """Rows of the source's in the PostgreSQL store (for steps and calls: those of the source's runs)."""

    @property
    def matches(self) -> bool:
        """Whether the target holds every row."""
        return self.source == self.target


def copy_store(source: SQLiteStore, target: PostgresStore) -> list[Count]:
    """Copy everything `source` holds into `target` (runs it has already are skipped); the counts after."""
    run_ids = [row[0] for row in source.conn.execute("SELECT run_id FROM runs ORDER BY started_at, rowid")]
    for run_id in run_ids:
        if target.get_run(run_id) is None:
            target.import_run(*_whole_run(source, run_id))
    recorder = Recorder(target)  # the cache puts are queued, sharing transactions
    for key, model, response in source.conn.execute("SELECT key, model, response FROM cache"):
        recorder.cache_put(key, model, json.loads(response))
    for row in source.db.query("SELECT * FROM experiments ORDER BY created_at, rowid"):
        experiment = experiment_from_row(row)
        if target.get_experiment(experiment.experiment_id) is None:
            target.create_experiment(experiment)
    _copy_versions(source, target)
    _copy_feedback(source, target, run_ids)
    copy_teacher(SQLiteBook(source.conn), PostgresBook(target))
    if target.writer is not None:
        target.writer.close()  # the cache puts are committed
    return counts(source, target, run_ids)


def _whole_run(
    source: SQLiteStore, run_id: str
) -> tuple[RunRecord, str | None, list[tuple[StepRecord, list[CallRecord]]]]:
    run = from_row(RunRecord, next(iter(source.db.query("SELECT * FROM runs WHERE run_id = ?", [run_id]))))
    if run.status == "interrupted":
        run.status = "running"  # as recorded: `interrupted` is only ever read
    calls: dict[int, list[CallRecord]] = {}
    for row in source.db.query("SELECT * FROM llm_calls WHERE run_id = ? ORDER BY id", [run_id]):
        calls.setdefault(row["step_id"], []).append(from_row(CallRecord, row))
    steps = [
        (from_row(StepRecord, row), calls.get(row["id"], []))
        for row in source.db.query("SELECT * FROM steps WHERE run_id = ? ORDER BY id", [run_id])
    ]
    return run, source.flow_text(run_id), steps


def _copy_versions(source: SQLiteStore, target: PostgresStore) -> None:
    rows = source.conn.execute("SELECT version_id, flow FROM versions ORDER BY created_at, rowid").fetchall()
    flows = sorted({flow for _, flow in rows})
    for version_id, _ in rows:
        version = source.get_version(version_id)
        assert version is not None
        blobs = {digest: source.blob(digest) or b"" for digest in set(version.files.values())}
        target.put_version(version, blobs)
    for flow in flows:
        for tag in source.list_tags(flow):
            target.set_tag(tag.flow, tag.tag, tag.version_id)


def _copy_feedback(source: SQLiteStore, target: PostgresStore, run_ids: list[str]) -> None:
    for run_id in run_ids:
        known = {f.feedback_id for f in target.feedback(run_id)}
        for feedback in source.feedback(run_id):
            if feedback.feedback_id not in known:
                target.add_feedback(feedback)


def copy_teacher(source: SQLiteBook, target: TeacherBook) -> None:
    """Cascades' teacher answers (a question the target has is replaced) and their decisions (those
    of a flow the target has none of: a second copy adds no duplicates)."""
    for flow in source.flows():
        for example in source.examples(flow):
            target.remember(example)
        if not target.decisions(flow):
            for decision in source.decisions(flow):
                target.note(decision)


def counts(source: SQLiteStore, target: PostgresStore, run_ids: list[str]) -> list[Count]:
    """Each table's rows in the source, and the source's rows found in the target."""
    found: list[Count] = []
    with target.transaction() as conn:
        for table in TABLES:
            mine = int(source.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
            if table in ("runs", "steps", "llm_calls"):
                sql, params = f"SELECT count(*) FROM {table} WHERE run_id = ANY(%s)", [run_ids]
            else:
                key = {
                    "cache": "key",
                    "experiments": "experiment_id",
                    "versions": "version_id",
                    "feedback": "feedback_id",
                }[table]
                ids = [row[0] for row in source.conn.execute(f"SELECT {key} FROM {table}")]
                sql, params = f"SELECT count(*) FROM {table} WHERE {key} = ANY(%s)", [ids]
            row = conn.execute(sql, params).fetchone()
            found.append(Count(table, mine, int(row[0]) if row else 0))
    return found
