"""`retrieve.fts`: full-text search (SQLite FTS5, BM25 ranking) over a document table.

A document table has `id`, `path`, `title`, `chunk` and `text` columns and an FTS5 index on
title and text; `flowstudio index DIR --table NAME` builds one from .txt and .md files. With
`documents: DIR` instead of `db:`, the node builds the same table in memory, once per process
and directory state, which suits a small document set shipped beside the flow. The table and its ranking are
`nodes.fts_search`'s.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any, ClassVar

import sqlite_utils
from pydantic import BaseModel, ConfigDict, Field

from nodes.fts_search import build_table, fts_query, search
from nodes.text_split import split_text
from studio.node import Node, NodeContext, NodeError, Role, paths

SUFFIXES = (".txt", ".md")
MAX_DOCUMENT_BYTES = 16 << 20
__all__ = ["RetrieveFTS", "document_rows", "fts_query", "index_directory"]
_memory: dict[tuple[Any, ...], sqlite_utils.Database] = {}
_memory_lock = threading.Lock()


def document_rows(directory: Path, chunk_chars: int, root: Path | None = None) -> list[dict[str, Any]]:
    """One row per chunk of every .txt and .md file under `directory`, in path order.

    Files are read with a size cap; a file (or link) resolving outside `root` (default: the
    directory) raises `paths.PathRefused`.
    """
    rows = []
    for path in paths.files_under(directory, root or directory, SUFFIXES):
        text = paths.read_capped(path, MAX_DOCUMENT_BYTES, "document").decode("utf-8", errors="replace")
        heading = re.search(r"^#+\s+(.+)$", text, re.MULTILINE)
        title = heading.group(1).strip() if heading else path.stem.replace("-", " ").replace("_", " ")
        name = path.relative_to(directory).as_posix()
        for number, chunk in enumerate(split_text(text, chunk_chars)):
            rows.append({"id": f"{name}#{number}", "path": name, "title": title, "chunk": number, "text": chunk})
    return rows


def index_directory(
    db: sqlite_utils.Database, table: str, directory: Path, chunk_chars: int = 1000, root: Path | None = None
) -> int:
    """(Re)build `table` and its FTS5 index from a directory (files confined under `root`); the row count."""
    return build_table(db, table, document_rows(directory, chunk_chars, root))


def _in_memory(directory: Path, table: str, chunk_chars: int, root: Path) -> sqlite_utils.Database:
    """The directory indexed in memory, rebuilt when a file changes."""
    files = list(paths.files_under(directory, root, SUFFIXES))
    key = (str(directory), table, chunk_chars, tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files))
    with _memory_lock:
        if key not in _memory:
            db = sqlite_utils.Database(sqlite3.connect(":memory:", check_same_thread=False))
            index_directory(db, table, directory, chunk_chars, root)
            _memory[key] = db
        return _memory[key]


class RetrieveFTS(Node):
    """Find the passages that best match a question (full-text search, BM25)."""

    roles: ClassVar[frozenset[Role]] = frozenset({"retrieve"})

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        table: str = Field(default="documents", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
        """The document table (built by `flowstudio index DIR --table NAME`)."""
        db: str | None = None
        """SQLite file holding the table, relative to the flow's directory."""
        documents: str | None = None
        """Instead of `db`: a directory of .txt/.md files (relative to the flow), indexed in memory."""
        limit: int = Field(default=3, ge=1, le=100)
        """How many passages to return."""
        chunk_chars: int = Field(default=1000, ge=100)
        """Passage length when indexing `documents`."""

    class Inputs(BaseModel):
        query: str
        """The question or keywords; any text (no query syntax needed)."""

    class Outputs(BaseModel):
        results: list[dict[str, Any]]
        """Passages, best first: `path`, `title`, `text`, `score`."""
        text: str
        """The passages' text joined by blank lines, ready for a prompt."""

    config: Config

    def check(self) -> list[tuple[str, str]]:
        if (self.config.db is None) == (self.config.documents is None):
            return [("db", "give either `db` (an indexed SQLite file) or `documents` (a directory)")]
        return []

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        results = await asyncio.to_thread(self._search, inputs.query, ctx.flow_dir)
        return self.Outputs(results=results, text="\n\n".join(r["text"] for r in results))

    def _search(self, query: str, flow_dir: Path) -> list[dict[str, Any]]:
        c = self.config
        hint = f"build it with `flowstudio index DIR --table {c.table} --db {c.db}`"
        root = paths.project_root(flow_dir)
        if c.documents is not None:
            try:
                directory = paths.confine(flow_dir, c.documents, root, "dir", "documents directory")
                return search(_in_memory(directory, c.table, c.chunk_chars, root), c.table, query, c.limit)
            except paths.PathRefused as err:
                missing = "does not exist" in str(err)
                raise NodeError(str(err), kind="not_found" if missing else "blocked") from None
        try:
            path = paths.confine(flow_dir, str(c.db), root, "file", "document database")
        except paths.PathRefused as err:
            if "does not exist" in str(err):
                raise NodeError(f"no document database at {flow_dir / str(c.db)}; {hint}", kind="not_found") from None
            raise NodeError(str(err), kind="blocked") from None
        db = sqlite_utils.Database(sqlite3.connect(path.as_uri() + "?mode=ro", uri=True))
        try:
            if not db[f"{c.table}_fts"].exists():
                raise NodeError(f"{path} has no indexed table {c.table!r}; {hint}", kind="not_found")
            return search(db, c.table, query, c.limit)
        finally:
            db.close()
