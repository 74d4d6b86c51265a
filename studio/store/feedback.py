"""Reviewers' feedback on runs, as the store keeps it (table `feedback`).

One record is one review of one run, in the shape of LangSmith's feedback (a key, a score, a
value, a comment, a correction) plus who gave it and the node they blamed. A run may have many;
the newest counts. `SQLiteFeedback` and `MemoryFeedback` implement the same operations.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from studio.store.base import RunRecord, new_id, now


@dataclass
class FeedbackRecord:
    """One reviewer's judgement of one run."""

    run_id: str
    """The run reviewed."""
    key: str = "verdict"
    """What was judged (LangSmith's `key`): `verdict` for a reviewer's good/bad, or a metric's name."""
    score: float | None = None
    """0 (bad) to 1 (good); None when the reviewer gave only a correction or a comment."""
    value: Any = None
    """A categorical judgement as JSON (`good`, `bad`), LangSmith's `value`."""
    correction: dict[str, Any] | None = None
    """The outputs the run should have given, by flow output name (only those the reviewer corrected)."""
    comment: str | None = None
    """Why, in the reviewer's words: what the optimizer's reflective step reads."""
    author: str | None = None
    """Who reviewed (`--author`, else the account running the review; the API's caller)."""
    node: str | None = None
    """The node the reviewer blamed, if any."""
    feedback_id: str = field(default_factory=new_id)
    """The record's id (16 hex digits)."""
    created_at: str = field(default_factory=now)
    """ISO 8601, UTC."""

    @property
    def good(self) -> bool | None:
        """True for a confirmed-good run, False for a bad one, None when undecided (no score)."""
        return None if self.score is None else self.score >= 0.5


COLUMNS = ("feedback_id", "run_id", "key", "score", "value", "correction", "comment", "author", "node", "created_at")
"""The `feedback` table's columns, in order."""


def migrate(db: Any) -> None:
    """Schema v6: the feedback table, by run and time."""
    db.execute(
        "CREATE TABLE feedback (feedback_id TEXT PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs, key TEXT NOT NULL,"
        " score REAL, value TEXT, correction TEXT, comment TEXT, author TEXT, node TEXT, created_at TEXT NOT NULL)"
    )
    db.execute("CREATE INDEX feedback_run ON feedback (run_id, created_at)")


def row(record: FeedbackRecord) -> tuple[Any, ...]:
    """The record as a `feedback` row (JSON text for the value and the correction)."""
    return (
        record.feedback_id, record.run_id, record.key, record.score, json.dumps(record.value),
        None if record.correction is None else json.dumps(record.correction), record.comment, record.author,
        record.node, record.created_at,
    )  # fmt: skip


def record(values: tuple[Any, ...]) -> FeedbackRecord:
    """A `feedback` row (columns in `COLUMNS` order) as its record."""
    feedback_id, run_id, key, score, value, correction, comment, author, node, created_at = values
    return FeedbackRecord(
        run_id, key, score, json.loads(value) if value is not None else None,
        json.loads(correction) if correction is not None else None, comment, author, node, feedback_id, created_at,
    )  # fmt: skip


class FeedbackStore(Protocol):
    """What reviews need from a store: its runs and their feedback (every store implements it)."""

    def get_run(self, run_id: str) -> RunRecord | None: ...
    def flow_text(self, run_id: str) -> str | None: ...
    def add_feedback(self, feedback: FeedbackRecord) -> FeedbackRecord: ...
    def feedback(self, run_id: str) -> list[FeedbackRecord]: ...
    def feedback_of_flow(self, flow: str, version: str | None = None) -> list[FeedbackRecord]: ...
    def reviewed(self, run_ids: list[str]) -> set[str]: ...


_SELECT = f"SELECT {', '.join('f.' + c for c in COLUMNS)} FROM feedback f"


class SQLiteFeedback:
    """The feedback operations of the SQLite store (mixed into `SQLiteStore`)."""

    conn: sqlite3.Connection

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def add_feedback(self, feedback: FeedbackRecord) -> FeedbackRecord:
        """Store one review of a run (KeyError when the store has no such run)."""
        with self.transaction() as conn:
            if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (feedback.run_id,)).fetchone() is None:
                raise KeyError(f"no run {feedback.run_id}")
            conn.execute(f"INSERT INTO feedback ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                         row(feedback))  # fmt: skip
        return copy.deepcopy(feedback)

    def feedback(self, run_id: str) -> list[FeedbackRecord]:
        """A run's feedback, oldest first."""
        rows = self.conn.execute(f"{_SELECT} WHERE f.run_id = ? ORDER BY f.created_at, f.rowid", (run_id,))
        return [record(r) for r in rows.fetchall()]

    def feedback_of_flow(self, flow: str, version: str | None = None) -> list[FeedbackRecord]:
        """The feedback on every run of a flow (of versions beginning `version`), oldest first."""
        sql = f"{_SELECT} JOIN runs r ON r.run_id = f.run_id WHERE r.flow = ?"
        params: list[Any] = [flow]
        if version is not None:
            sql, params = sql + " AND instr(r.version, ?) = 1", [*params, version]
        rows = self.conn.execute(sql + " ORDER BY f.created_at, f.rowid", params)
        return [record(r) for r in rows.fetchall()]

    def reviewed(self, run_ids: list[str]) -> set[str]:
        """Which of these runs have feedback."""
        found: set[str] = set()
        for start in range(0, len(run_ids), 500):
            chunk = run_ids[start : start + 500]
            sql = f"SELECT DISTINCT run_id FROM feedback WHERE run_id IN ({', '.join('?' * len(chunk))})"
            found.update(r[0] for r in self.conn.execute(sql, chunk))
        return found


class MemoryFeedback:
    """The feedback operations of the in-memory store (mixed into `MemoryStore`)."""

    _runs: dict[str, Any]

    def _feedback_list(self) -> list[FeedbackRecord]:
        if not hasattr(self, "_feedback"):
            self._feedback: list[FeedbackRecord] = []
        return self._feedback

    def add_feedback(self, feedback: FeedbackRecord) -> FeedbackRecord:
        """Store one review of a run (KeyError when the store has no such run)."""
        if feedback.run_id not in self._runs:
            raise KeyError(f"no run {feedback.run_id}")
        self._feedback_list().append(copy.deepcopy(feedback))
        return copy.deepcopy(feedback)

    def feedback(self, run_id: str) -> list[FeedbackRecord]:
        """A run's feedback, oldest first."""
        return [copy.deepcopy(f) for f in _oldest_first(self._feedback_list()) if f.run_id == run_id]

    def feedback_of_flow(self, flow: str, version: str | None = None) -> list[FeedbackRecord]:
        """The feedback on every run of a flow (of versions beginning `version`), oldest first."""

        def matches(run_id: str) -> bool:
            run = self._runs[run_id]
            return bool(run.flow == flow and (version is None or (run.version or "").startswith(version)))

        return [copy.deepcopy(f) for f in _oldest_first(self._feedback_list()) if matches(f.run_id)]

    def reviewed(self, run_ids: list[str]) -> set[str]:
        """Which of these runs have feedback."""
        return {f.run_id for f in self._feedback_list()} & set(run_ids)


def _oldest_first(records: list[FeedbackRecord]) -> list[FeedbackRecord]:
    return sorted(records, key=lambda f: f.created_at)  # stable: equal times keep insertion order
