"""A document table's FTS5 index and its ranking: each query word on its own, BM25 rescaled to
Lucene's IDF (`retrieve.fts`, `flowstudio index`)."""

from __future__ import annotations

import math
import re
from typing import Any

import sqlite_utils

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "so",
        "that",
        "the",
        "their",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


def build_table(db: sqlite_utils.Database, table: str, rows: list[dict[str, Any]]) -> int:
    """(Re)build `table` from document rows (`id`, `path`, `title`, `chunk`, `text`) and its FTS5
    index on title and text; the row count."""
    if db[table].exists():
        if db[f"{table}_fts"].exists():
            db[table].disable_fts()  # type: ignore[union-attr]
        db[table].drop()
    columns = {"id": str, "path": str, "title": str, "chunk": int, "text": str}
    db[table].create(columns, pk="id")  # type: ignore[union-attr]
    db[table].insert_all(rows)  # type: ignore[union-attr]
    db[table].enable_fts(["title", "text"], tokenize="porter")  # type: ignore[union-attr]
    return len(rows)


def query_terms(question: str) -> list[str]:
    """A free-text question's words, lower-cased, stop-words out, each once, in order."""
    return list(dict.fromkeys(w for w in re.findall(r"\w+", question.lower()) if w not in STOPWORDS))


def fts_query(question: str) -> str:
    """A free-text question as an FTS5 query: its words, quoted, any of them (BM25 ranks)."""
    return " OR ".join(f'"{w}"' for w in query_terms(question))


def _idf_ratio(total: int, matching: int) -> float:
    """Lucene's BM25 IDF over FTS5's for a term in `matching` of `total` rows.

    FTS5's IDF, log((N - n + 0.5) / (n + 0.5)), drops to a floor of 1e-6 once a term is in half
    the rows, so in a small document set a word that two of five files share counts for almost
    nothing and a rare filler word ("take") outranks the topic ("refund"). Lucene's
    log(1 + (N - n + 0.5) / (n + 0.5)) stays positive and keeps the order of rarity.
    """
    odds = (total - matching + 0.5) / (matching + 0.5)
    return math.log1p(odds) / max(math.log(odds), 1e-6)


def search(db: sqlite_utils.Database, table: str, question: str, limit: int) -> list[dict[str, Any]]:
    """The best `limit` chunks for a question, best first, each with its BM25 `score` (higher is better).

    Each query word is matched on its own (FTS5's tokenizer and length normalisation) and its
    BM25 weight rescaled to Lucene's IDF (`_idf_ratio`); a chunk's score is the sum over words.
    """
    fts = f'"{table}_fts"'
    total = db.execute(f"SELECT count(*) FROM {fts}").fetchone()[0]
    scores: dict[int, float] = {}
    for term in query_terms(question):
        hits = db.execute(f"SELECT rowid, -bm25({fts}) FROM {fts} WHERE {fts} MATCH ?", [f'"{term}"']).fetchall()
        for rowid, score in hits:
            scores[rowid] = scores.get(rowid, 0.0) + score * _idf_ratio(total, len(hits))
    best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]
    rows = []
    for rowid, score in best:
        path, title, text = db.execute(f'SELECT path, title, text FROM "{table}" WHERE rowid = ?', [rowid]).fetchone()
        rows.append({"path": path, "title": title, "text": text, "score": round(score, 6)})
    return rows
