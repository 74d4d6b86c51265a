"""Cascades in a PostgreSQL store: the teacher book (`studio.store.teacher.TeacherBook`) in two
tables made on first use, the questions ranked by PostgreSQL's full-text `ts_rank` over their
words (the `simple` configuration: no stemming, no stop words), any word matching."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from dataclasses import asdict, fields
from typing import Any, Protocol, cast

from studio.store.teacher import Decision, KeptExample, words

TABLES = """
CREATE TABLE IF NOT EXISTS teacher_examples (id BIGSERIAL PRIMARY KEY, flow TEXT NOT NULL, node TEXT NOT NULL,
  query TEXT NOT NULL, inputs TEXT NOT NULL, output TEXT NOT NULL, version TEXT, run_id TEXT,
  created_at TEXT NOT NULL, UNIQUE (flow, node, query));
CREATE TABLE IF NOT EXISTS cascade_calls (id BIGSERIAL PRIMARY KEY, flow TEXT NOT NULL, node TEXT NOT NULL,
  run_id TEXT, version TEXT, by TEXT NOT NULL, reason TEXT NOT NULL, agreeing INTEGER NOT NULL,
  samples INTEGER NOT NULL, confidence DOUBLE PRECISION, student_cost_usd DOUBLE PRECISION NOT NULL,
  teacher_cost_usd DOUBLE PRECISION NOT NULL, created_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS cascade_calls_flow ON cascade_calls (flow, created_at)
"""
_EXAMPLE = "flow, node, query, inputs, output, version, run_id, created_at"
_DECISION = [f.name for f in fields(Decision)]


class _Pooled(Protocol):
    def transaction(self) -> AbstractContextManager[Any]: ...


class PostgresBook:
    """The teacher book of a PostgreSQL store (tables made on first use)."""

    def __init__(self, store: _Pooled) -> None:
        self.store = store
        self._ready = False

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self.store.transaction() as conn:
            if not self._ready:
                conn.execute("SELECT pg_advisory_xact_lock(4404)")  # concurrent first uses make the tables once
                for statement in TABLES.split(";"):
                    conn.execute(cast(Any, statement))
                self._ready = True
            cursor = conn.execute(cast(Any, sql), params)
            return list(cursor.fetchall()) if cursor.description else []

    def remember(self, example: KeptExample) -> None:
        """Keep one teacher answer (an answer to the same question of the node replaces it)."""
        e = example
        self._run(
            f"INSERT INTO teacher_examples ({_EXAMPLE}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (flow, node, query) DO UPDATE SET inputs = EXCLUDED.inputs, output = EXCLUDED.output,"
            " version = EXCLUDED.version, run_id = EXCLUDED.run_id, created_at = EXCLUDED.created_at",
            (e.flow, e.node, e.query, json.dumps(e.inputs), e.output, e.version, e.run_id, e.created_at),
        )

    def nearest(self, flow: str, node: str, query: str, k: int) -> list[KeptExample]:
        """Up to `k` of the node's kept answers sharing a word with `query`, best `ts_rank` first."""
        terms = " | ".join(dict.fromkeys(words(query)))
        if k <= 0 or not terms:
            return []
        rows = self._run(
            f"SELECT {_EXAMPLE} FROM (SELECT *, to_tsvector('simple', query) AS doc, to_tsquery('simple', %s) AS q"
            " FROM teacher_examples WHERE flow = %s AND node = %s) found WHERE doc @@ q"
            " ORDER BY ts_rank(doc, q) DESC, id LIMIT %s",
            (terms, flow, node, k),
        )
        return [_example(r) for r in rows]

    def examples(self, flow: str, node: str | None = None) -> list[KeptExample]:
        """The kept answers of a flow (of one node), oldest first."""
        sql, params = f"SELECT {_EXAMPLE} FROM teacher_examples WHERE flow = %s", [flow]
        if node is not None:
            sql, params = sql + " AND node = %s", [flow, node]
        return [_example(r) for r in self._run(sql + " ORDER BY created_at, id", tuple(params))]

    def note(self, decision: Decision) -> None:
        """Record one cascade call's decision."""
        row = asdict(decision)
        self._run(
            f"INSERT INTO cascade_calls ({', '.join(row)}) VALUES ({', '.join(['%s'] * len(row))})",
            tuple(row.values()),
        )

    def decisions(self, flow: str) -> list[Decision]:
        """A flow's cascade decisions, oldest first."""
        rows = self._run(
            f"SELECT {', '.join(_DECISION)} FROM cascade_calls WHERE flow = %s ORDER BY created_at, id", (flow,)
        )
        return [Decision(**dict(zip(_DECISION, r, strict=True))) for r in rows]


def _example(row: tuple[Any, ...]) -> KeptExample:
    flow, node, query, inputs, output, version, run_id, created_at = row
    return KeptExample(flow, node, query, json.loads(inputs), output, version, run_id, created_at)
