"""Cascades in the store: each node's teacher answers (the memory its student recalls) and each
cascade call's decision (who answered, why, at what cost), so both outlive one process.

SQLite keeps them in two tables made on first use (`teacher_examples`, with an FTS5 index on the
question, and `cascade_calls`); retrieval is FTS5's BM25 over the question's words, as the
`retrieve.fts` node's. Other stores keep them in the process (`MemoryBook`).
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from studio.store.base import now

TABLES = """
CREATE TABLE IF NOT EXISTS teacher_examples (id INTEGER PRIMARY KEY, flow TEXT NOT NULL, node TEXT NOT NULL,
  query TEXT NOT NULL, inputs TEXT NOT NULL, output TEXT NOT NULL, version TEXT, run_id TEXT,
  created_at TEXT NOT NULL, UNIQUE (flow, node, query));
CREATE VIRTUAL TABLE IF NOT EXISTS teacher_fts USING fts5(query, flow UNINDEXED, node UNINDEXED);
CREATE TABLE IF NOT EXISTS cascade_calls (id INTEGER PRIMARY KEY, flow TEXT NOT NULL, node TEXT NOT NULL,
  run_id TEXT, version TEXT, by TEXT NOT NULL, reason TEXT NOT NULL, agreeing INTEGER NOT NULL,
  samples INTEGER NOT NULL, confidence REAL, student_cost_usd REAL NOT NULL, teacher_cost_usd REAL NOT NULL,
  created_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS cascade_calls_flow ON cascade_calls (flow, created_at);
"""


@dataclass(frozen=True)
class KeptExample:
    """One teacher answer kept for a node."""

    flow: str
    """The flow's name."""
    node: str
    """The node's id."""
    query: str
    """The question's text (what retrieval matches on)."""
    inputs: dict[str, Any]
    """The node's input values."""
    output: str
    """The teacher's answer."""
    version: str | None = None
    """The flow version of the run that asked (None: an unpublished flow)."""
    run_id: str | None = None
    """The run whose call the teacher answered."""
    created_at: str = field(default_factory=now)
    """ISO 8601, UTC."""


@dataclass(frozen=True)
class Decision:
    """One call of a cascade node: who answered and why, and what each model cost."""

    flow: str
    """The flow's name."""
    node: str
    """The node's id."""
    by: str
    """`student` or `teacher`."""
    reason: str
    """Why, in words (`2 of 3 samples agreed`, `confidence 0.41 < 0.7`, `warming`)."""
    agreeing: int
    """Student samples that gave the majority answer (0 when the student was not asked)."""
    samples: int
    """Student samples taken."""
    confidence: float | None = None
    """The student's confidence in its answer (a classifier's label share), if measured."""
    student_cost_usd: float = 0.0
    """What the student's calls cost."""
    teacher_cost_usd: float = 0.0
    """What the teacher's call cost (0 when the student answered)."""
    run_id: str | None = None
    """The run."""
    version: str | None = None
    """The flow version of the run."""
    created_at: str = field(default_factory=now)
    """ISO 8601, UTC."""


class TeacherBook(Protocol):
    """Where a store keeps cascades' teacher answers and decisions."""

    def remember(self, example: KeptExample) -> None:
        """Keep one teacher answer (an answer to the same question of the node replaces it)."""
        ...

    def nearest(self, flow: str, node: str, query: str, k: int) -> list[KeptExample]:
        """Up to `k` of the node's kept answers sharing a word with `query`, best BM25 first."""
        ...

    def examples(self, flow: str, node: str | None = None) -> list[KeptExample]:
        """The kept answers of a flow (of one node), oldest first."""
        ...

    def note(self, decision: Decision) -> None:
        """Record one cascade call's decision."""
        ...

    def decisions(self, flow: str) -> list[Decision]:
        """A flow's cascade decisions, oldest first."""
        ...


def words(text: str) -> list[str]:
    """The lower-cased words of `text`."""
    return re.findall(r"\w+", text.lower())


def match_expression(query: str) -> str:
    """An FTS5 query matching any of the question's words (each quoted, so none is an operator)."""
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(words(query)))


class SQLiteBook:
    """The teacher book of a SQLite store (tables made on first use)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._ready = False

    def _tables(self) -> None:
        if not self._ready:
            self.conn.executescript(TABLES)
            self._ready = True

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Rows of a query; none while the tables were never made (a read never makes them)."""
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as err:
            if "no such table" in str(err):
                return []
            raise

    def _write(self, sql: str, params: tuple[Any, ...]) -> int:
        self._tables()
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            rowid = int(self.conn.execute(sql, params).lastrowid or 0)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        return rowid

    def remember(self, example: KeptExample) -> None:
        """Keep one teacher answer (an answer to the same question of the node replaces it)."""
        self._tables()
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            old = self.conn.execute(
                "SELECT id FROM teacher_examples WHERE flow = ? AND node = ? AND query = ?",
                (example.flow, example.node, example.query),
            ).fetchone()
            if old:
                self.conn.execute("DELETE FROM teacher_examples WHERE id = ?", old)
                self.conn.execute("DELETE FROM teacher_fts WHERE rowid = ?", old)
            e = example
            rowid = self.conn.execute(
                "INSERT INTO teacher_examples (flow, node, query, inputs, output, version, run_id, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (e.flow, e.node, e.query, json.dumps(e.inputs), e.output, e.version, e.run_id, e.created_at),
            ).lastrowid
            self.conn.execute(
                "INSERT INTO teacher_fts (rowid, query, flow, node) VALUES (?, ?, ?, ?)",
                (rowid, e.query, e.flow, e.node),
            )
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def nearest(self, flow: str, node: str, query: str, k: int) -> list[KeptExample]:
        """Up to `k` of the node's kept answers sharing a word with `query`, best BM25 first."""
        expression = match_expression(query)
        if k <= 0 or not expression:
            return []
        rows = self._read(
            f"SELECT {_SELECT} FROM teacher_fts f JOIN teacher_examples e ON e.id = f.rowid"
            " WHERE teacher_fts MATCH ? AND f.flow = ? AND f.node = ? ORDER BY bm25(teacher_fts), e.id LIMIT ?",
            (expression, flow, node, k),
        )
        return [_example(r) for r in rows]

    def examples(self, flow: str, node: str | None = None) -> list[KeptExample]:
        """The kept answers of a flow (of one node), oldest first."""
        sql, params = f"SELECT {_SELECT} FROM teacher_examples e WHERE e.flow = ?", [flow]
        if node is not None:
            sql, params = sql + " AND e.node = ?", [*params, node]
        return [_example(r) for r in self._read(sql + " ORDER BY e.created_at, e.id", tuple(params))]

    def flows(self) -> list[str]:
        """The flows with kept answers or decisions, sorted."""
        union = "SELECT flow FROM teacher_examples UNION SELECT flow FROM cascade_calls ORDER BY flow"
        return [r[0] for r in self._read(union, ())]

    def note(self, decision: Decision) -> None:
        """Record one cascade call's decision."""
        d = asdict(decision)
        self._write(f"INSERT INTO cascade_calls ({', '.join(d)}) VALUES ({', '.join('?' * len(d))})", tuple(d.values()))

    def decisions(self, flow: str) -> list[Decision]:
        """A flow's cascade decisions, oldest first."""
        names = [f.name for f in Decision.__dataclass_fields__.values()]
        rows = self._read(
            f"SELECT {', '.join(names)} FROM cascade_calls WHERE flow = ? ORDER BY created_at, id", (flow,)
        )
        return [Decision(**dict(zip(names, r, strict=True))) for r in rows]


_SELECT = "e.flow, e.node, e.query, e.inputs, e.output, e.version, e.run_id, e.created_at"


def _example(row: tuple[Any, ...]) -> KeptExample:
    flow, node, query, inputs, output, version, run_id, created_at = row
    return KeptExample(flow, node, query, json.loads(inputs), output, version, run_id, created_at)
