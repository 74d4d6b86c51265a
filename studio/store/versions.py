"""Published flow versions and their tags, as the store keeps them (tables `versions`, `blobs`, `tags`).

A version's files are kept by content hash in `blobs`, so two versions sharing a file (or a
document an index was built from) store it once. Both stores implement the same operations:
`SQLiteVersions` over the SQLite connection, `MemoryVersions` in dictionaries.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from studio.store.base import now


@dataclass
class VersionRecord:
    """One published, immutable snapshot of a flow and every file it reads."""

    version_id: str
    """The content hash of the snapshot (64 hex digits): the same content, the same id."""
    flow: str
    """The flow's `name`."""
    entry: str
    """The flow file's path inside the snapshot (POSIX, relative)."""
    files: dict[str, str]
    """Every file of the snapshot: relative POSIX path → sha256 of its bytes (kept in `blobs`)."""
    note: str | None = None
    """What the publisher said about it."""
    created_at: str = field(default_factory=now)
    """When it was first published (ISO 8601, UTC)."""
    author: str | None = None
    """Who published it (`--author`, else the account that published it); None when unknown."""


@dataclass
class TagRecord:
    """A name (`prod`, `v1`) pointing at one version of a flow; moving it is a new publish-free release."""

    flow: str
    """The flow's `name`."""
    tag: str
    """The tag's name."""
    version_id: str
    """The version it points at."""
    moved_at: str = field(default_factory=now)
    """When it was last set (ISO 8601, UTC)."""


def migrate(db: Any) -> None:
    """Schema v5: the version tables, and the version each run ran."""
    db.execute("CREATE TABLE blobs (hash TEXT PRIMARY KEY, data BLOB NOT NULL)")
    db.execute(
        "CREATE TABLE versions (version_id TEXT PRIMARY KEY, flow TEXT NOT NULL, entry TEXT NOT NULL,"
        " files TEXT NOT NULL, note TEXT, created_at TEXT NOT NULL)"
    )
    db.execute("CREATE INDEX versions_flow ON versions (flow, created_at)")
    db.execute(
        "CREATE TABLE tags (flow TEXT NOT NULL, tag TEXT NOT NULL, version_id TEXT NOT NULL REFERENCES versions,"
        " moved_at TEXT NOT NULL, PRIMARY KEY (flow, tag))"
    )
    db.execute("ALTER TABLE runs ADD COLUMN version TEXT")
    db.execute("CREATE INDEX runs_version ON runs (version, started_at)")


def migrate_author(db: Any) -> None:
    """Schema v7: who published each version."""
    db.execute("ALTER TABLE versions ADD COLUMN author TEXT")


class SQLiteVersions:
    """The version operations of the SQLite store (mixed into `SQLiteStore`)."""

    conn: sqlite3.Connection

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def put_version(self, version: VersionRecord, blobs: dict[str, bytes]) -> VersionRecord:
        """Store a version and its files' bytes; an id already stored is kept as it was (and returned)."""
        with self.transaction() as conn:
            conn.executemany("INSERT OR IGNORE INTO blobs (hash, data) VALUES (?, ?)", list(blobs.items()))
            conn.execute(
                "INSERT OR IGNORE INTO versions VALUES (?, ?, ?, ?, ?, ?, ?)",
                (version.version_id, version.flow, version.entry, json.dumps(version.files), version.note,
                 version.created_at, version.author),
            )  # fmt: skip
        found = self.get_version(version.version_id)
        assert found is not None
        return found

    def get_version(self, version_id: str) -> VersionRecord | None:
        """The version with exactly this id, or None."""
        row = self.conn.execute("SELECT * FROM versions WHERE version_id = ?", (version_id,)).fetchone()
        return _version(row) if row else None

    def list_versions(self, flow: str) -> list[VersionRecord]:
        """Every version of a flow, newest first."""
        rows = self.conn.execute(
            "SELECT * FROM versions WHERE flow = ? ORDER BY created_at DESC, rowid DESC", (flow,)
        ).fetchall()
        return [_version(row) for row in rows]

    def blob(self, digest: str) -> bytes | None:
        """A file's bytes by their sha256, or None."""
        row = self.conn.execute("SELECT data FROM blobs WHERE hash = ?", (digest,)).fetchone()
        return bytes(row[0]) if row else None

    def set_tag(self, flow: str, tag: str, version_id: str) -> TagRecord:
        """Point `tag` of `flow` at a version (created or moved)."""
        record = TagRecord(flow, tag, version_id)
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO tags VALUES (?, ?, ?, ?) ON CONFLICT (flow, tag) DO UPDATE"
                " SET version_id = excluded.version_id, moved_at = excluded.moved_at",
                (flow, tag, version_id, record.moved_at),
            )
        return record

    def remove_tag(self, flow: str, tag: str) -> bool:
        """Remove a tag; False when the flow had none by that name."""
        with self.transaction() as conn:
            return conn.execute("DELETE FROM tags WHERE flow = ? AND tag = ?", (flow, tag)).rowcount > 0

    def list_tags(self, flow: str) -> list[TagRecord]:
        """The flow's tags, by name."""
        rows = self.conn.execute("SELECT * FROM tags WHERE flow = ? ORDER BY tag", (flow,)).fetchall()
        return [TagRecord(*row) for row in rows]


def _version(row: tuple[Any, ...]) -> VersionRecord:
    version_id, flow, entry, files, note, created_at, author = row
    return VersionRecord(version_id, flow, entry, json.loads(files), note, created_at, author)


class MemoryVersions:
    """The version operations of the in-memory store (mixed into `MemoryStore`)."""

    def _version_tables(self) -> tuple[dict[str, VersionRecord], dict[str, bytes], dict[tuple[str, str], TagRecord]]:
        if not hasattr(self, "_versions"):
            self._versions: dict[str, VersionRecord] = {}
            self._blobs: dict[str, bytes] = {}
            self._tags: dict[tuple[str, str], TagRecord] = {}
        return self._versions, self._blobs, self._tags

    def put_version(self, version: VersionRecord, blobs: dict[str, bytes]) -> VersionRecord:
        """Store a version and its files' bytes; an id already stored is kept as it was (and returned)."""
        versions, stored, _ = self._version_tables()
        for digest, data in blobs.items():
            stored.setdefault(digest, data)
        versions.setdefault(version.version_id, copy.deepcopy(version))
        return copy.deepcopy(versions[version.version_id])

    def get_version(self, version_id: str) -> VersionRecord | None:
        """The version with exactly this id, or None."""
        found = self._version_tables()[0].get(version_id)
        return copy.deepcopy(found) if found else None

    def list_versions(self, flow: str) -> list[VersionRecord]:
        """Every version of a flow, newest first."""
        found = [v for v in self._version_tables()[0].values() if v.flow == flow]
        return [copy.deepcopy(v) for v in _newest_first(found)]

    def blob(self, digest: str) -> bytes | None:
        """A file's bytes by their sha256, or None."""
        return self._version_tables()[1].get(digest)

    def set_tag(self, flow: str, tag: str, version_id: str) -> TagRecord:
        """Point `tag` of `flow` at a version (created or moved)."""
        record = TagRecord(flow, tag, version_id)
        self._version_tables()[2][flow, tag] = record
        return copy.deepcopy(record)

    def remove_tag(self, flow: str, tag: str) -> bool:
        """Remove a tag; False when the flow had none by that name."""
        return self._version_tables()[2].pop((flow, tag), None) is not None

    def list_tags(self, flow: str) -> list[TagRecord]:
        """The flow's tags, by name."""
        tags = self._version_tables()[2]
        return [copy.deepcopy(tags[key]) for key in sorted(key for key in tags if key[0] == flow)]


def _newest_first(versions: list[VersionRecord]) -> Iterator[VersionRecord]:
    order = {id(v): n for n, v in enumerate(versions)}
    return iter(sorted(versions, key=lambda v: (v.created_at, order[id(v)]), reverse=True))
