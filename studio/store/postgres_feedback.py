"""The feedback operations of the PostgreSQL store (mixed into `PostgresStore`); see `studio.store.feedback`."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import psycopg

from studio.store.feedback import COLUMNS, FeedbackRecord, record, row

MIGRATION = """
CREATE TABLE feedback (seq BIGSERIAL UNIQUE, feedback_id TEXT PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs,
    key TEXT NOT NULL, score DOUBLE PRECISION, value TEXT, correction TEXT, comment TEXT, author TEXT, node TEXT,
    created_at TEXT NOT NULL);
CREATE INDEX feedback_run ON feedback (run_id, created_at);
"""
"""Schema v3: SQLite's v6 (the feedback table)."""

_SELECT = f"SELECT {', '.join('f.' + c for c in COLUMNS)} FROM feedback f"


class PostgresFeedback:
    """Feedback on runs in PostgreSQL."""

    def transaction(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        raise NotImplementedError

    def add_feedback(self, feedback: FeedbackRecord) -> FeedbackRecord:
        """Store one review of a run (KeyError when the store has no such run)."""
        with self.transaction() as conn:
            if conn.execute("SELECT 1 FROM runs WHERE run_id = %s", (feedback.run_id,)).fetchone() is None:
                raise KeyError(f"no run {feedback.run_id}")
            marks = ", ".join(["%s"] * len(COLUMNS))
            conn.execute(f"INSERT INTO feedback ({', '.join(COLUMNS)}) VALUES ({marks})", row(feedback))
        return feedback

    def feedback(self, run_id: str) -> list[FeedbackRecord]:
        """A run's feedback, oldest first."""
        with self.transaction() as conn:
            rows = conn.execute(f"{_SELECT} WHERE f.run_id = %s ORDER BY f.created_at, f.seq", (run_id,)).fetchall()
        return [record(r) for r in rows]

    def feedback_of_flow(self, flow: str, version: str | None = None) -> list[FeedbackRecord]:
        """The feedback on every run of a flow (of versions beginning `version`), oldest first."""
        sql = f"{_SELECT} JOIN runs r ON r.run_id = f.run_id WHERE r.flow = %s"
        params: list[Any] = [flow]
        if version is not None:
            sql, params = sql + " AND starts_with(r.version, %s)", [*params, version]
        with self.transaction() as conn:
            rows = conn.execute(sql + " ORDER BY f.created_at, f.seq", params).fetchall()
        return [record(r) for r in rows]

    def reviewed(self, run_ids: list[str]) -> set[str]:
        """Which of these runs have feedback."""
        with self.transaction() as conn:
            rows = conn.execute("SELECT DISTINCT run_id FROM feedback WHERE run_id = ANY(%s)", (run_ids,)).fetchall()
        return {r[0] for r in rows}
