"""Teacher memory: a node's kept teacher answers (`strategy: cascade`), nearest by BM25.

Kept per engine (one process) and keyed by flow name and node id; retrieval scores each kept
question against the current one with Okapi BM25 over lower-cased words.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from studio.node import TeacherExample

K1 = 1.5
"""BM25's term-frequency saturation."""
B = 0.75
"""BM25's length normalisation."""


def words(text: str) -> list[str]:
    """The lower-cased words of `text`."""
    return re.findall(r"\w+", text.lower())


class ExampleMemory:
    """One node's teacher examples (implements `studio.node.Memory`)."""

    def __init__(self) -> None:
        self.examples: list[TeacherExample] = []

    def remember(self, example: TeacherExample) -> None:
        """Keep one teacher answer; an answer to the same question replaces the older one."""
        self.examples = [e for e in self.examples if e.query != example.query]
        self.examples.append(example)

    def nearest(self, query: str, k: int) -> list[TeacherExample]:
        """Up to `k` examples sharing a word with `query`, best BM25 score first."""
        if k <= 0 or not self.examples:
            return []
        docs = [words(e.query) for e in self.examples]
        scores = bm25(words(query), docs)
        ranked = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: -scores[i])
        return [self.examples[i] for i in ranked[:k]]


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


class Memories:
    """Every node's teacher memory in one engine, by (flow name, node id)."""

    def __init__(self) -> None:
        self.by_node: dict[tuple[str, str], ExampleMemory] = {}

    def of(self, flow: str, node: str) -> ExampleMemory:
        """The memory of `node` in `flow` (created empty on first use)."""
        return self.by_node.setdefault((flow, node), ExampleMemory())
