"""Teacher memory: a node's kept teacher answers (`strategy: cascade`), nearest by BM25.

Kept in the engine's store (`studio.store.teacher`): a SQLite store keeps them in its file (FTS5's
BM25), a PostgreSQL store in its database (`ts_rank`), so a later run, process or `serve` recalls
them; the memory store keeps them in the process (`MemoryBook`, Okapi BM25 in Python over
lower-cased words). Each run's node gets a `NodeMemory`:
the book seen through its flow, node, run and flow version.
"""

from __future__ import annotations

import math
import weakref
from collections import Counter
from typing import Any

from studio.node import CascadeOutcome, TeacherExample
from studio.store.teacher import Decision, KeptExample, SQLiteBook, TeacherBook, words

K1 = 1.5
"""BM25's term-frequency saturation."""
B = 0.75
"""BM25's length normalisation."""

__all__ = ["Memories", "MemoryBook", "NodeMemory", "bm25", "book_for", "words"]


class MemoryBook:
    """A teacher book kept in the process (implements `studio.store.teacher.TeacherBook`)."""

    def __init__(self) -> None:
        self.kept: list[KeptExample] = []
        self.noted: list[Decision] = []

    def remember(self, example: KeptExample) -> None:
        """Keep one teacher answer; an answer to the same question of the node replaces the older one."""
        same = (example.flow, example.node, example.query)
        self.kept = [e for e in self.kept if (e.flow, e.node, e.query) != same]
        self.kept.append(example)

    def nearest(self, flow: str, node: str, query: str, k: int) -> list[KeptExample]:
        """Up to `k` of the node's examples sharing a word with `query`, best BM25 score first."""
        mine = self.examples(flow, node)
        if k <= 0 or not mine:
            return []
        scores = bm25(words(query), [words(e.query) for e in mine])
        ranked = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: -scores[i])
        return [mine[i] for i in ranked[:k]]

    def examples(self, flow: str, node: str | None = None) -> list[KeptExample]:
        """The kept answers of a flow (of one node), oldest first."""
        return [e for e in self.kept if e.flow == flow and node in (None, e.node)]

    def note(self, decision: Decision) -> None:
        """Record one cascade call's decision."""
        self.noted.append(decision)

    def decisions(self, flow: str) -> list[Decision]:
        """A flow's cascade decisions, oldest first."""
        return [d for d in self.noted if d.flow == flow]


def bm25(query: list[str], docs: list[list[str]]) -> list[float]:
    """Okapi BM25 score of each document for `query`."""
    n = len(docs)
    average = sum(len(d) for d in docs) / n or 1.0
    frequency = Counter(term for d in docs for term in set(d))
    scores = []
    for doc in docs:
        counts = Counter(doc)
        score = 0.0
        for term in set(query):
            tf = counts[term]
            if tf:
                idf = math.log(1 + (n - frequency[term] + 0.5) / (frequency[term] + 0.5))
                score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(doc) / average))
        scores.append(score)
    return scores


_BOOKS: weakref.WeakKeyDictionary[Any, MemoryBook] = weakref.WeakKeyDictionary()


def book_for(store: Any) -> TeacherBook:
    """The teacher book of `store`: in its SQLite file or PostgreSQL database, else (the memory
    store) one per store object in this process."""
    conn = getattr(store, "conn", None)
    if conn is not None and getattr(store, "path", None) is not None and hasattr(conn, "executescript"):
        return SQLiteBook(conn)
    if type(store).__module__ == "studio.store.postgres":
        from studio.store.postgres_teacher import PostgresBook

        return PostgresBook(store)
    try:
        return _BOOKS.setdefault(store, MemoryBook())
    except TypeError:  # a store that takes no weak reference
        return MemoryBook()


class NodeMemory:
    """One node's memory in one run (implements `studio.node.Memory`)."""

    def __init__(
        self, book: TeacherBook, flow: str, node: str, *, run_id: str | None, version: str | None, warming: bool
    ) -> None:
        self.book = book
        self.flow = flow
        self.node = node
        self.run_id = run_id
        self.version = version
        self.warming = warming

    @property
    def examples(self) -> list[TeacherExample]:
        """The node's kept teacher answers, oldest first."""
        return [_teacher(e) for e in self.book.examples(self.flow, self.node)]

    def nearest(self, query: str, k: int) -> list[TeacherExample]:
        """Up to `k` kept examples closest to `query`, best first."""
        return [_teacher(e) for e in self.book.nearest(self.flow, self.node, query, k)]

    def remember(self, example: TeacherExample) -> None:
        """Keep one teacher answer, with the run and flow version that asked."""
        self.book.remember(
            KeptExample(self.flow, self.node, example.query, example.inputs, example.output, self.version, self.run_id)
        )

    def note(self, outcome: CascadeOutcome) -> None:
        """Record who answered one call and why."""
        o = outcome
        self.book.note(
            Decision(
                self.flow,
                self.node,
                o.by,
                o.reason,
                o.agreeing,
                o.samples,
                o.confidence,
                o.student_cost_usd,
                o.teacher_cost_usd,
                self.run_id,
                self.version,
            )
        )


def _teacher(example: KeptExample) -> TeacherExample:
    return TeacherExample(example.query, example.inputs, example.output)


class Memories:
    """Every node's teacher memory for one engine, kept in its store's teacher book."""

    def __init__(self, store: Any = None) -> None:
        self.book: TeacherBook = book_for(store) if store is not None else MemoryBook()
        self.warming = False
        """True for a `batch --warm-cascade`: every cascade asks its teacher, to seed the memory."""

    def of(self, flow: str, node: str, *, run_id: str | None = None, version: str | None = None) -> NodeMemory:
        """The memory of `node` in `flow`, for one run of a flow version."""
        return NodeMemory(self.book, flow, node, run_id=run_id, version=version, warming=self.warming)
