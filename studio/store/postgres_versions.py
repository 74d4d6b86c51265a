"""The version operations of the PostgreSQL store (mixed into `PostgresStore`); see `studio.store.versions`."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from studio.store.versions import TagRecord, VersionRecord

_VERSION = "SELECT version_id, flow, entry, files, note, created_at, author FROM versions"
MIGRATION = "ALTER TABLE versions ADD COLUMN author TEXT;"
"""Schema v4: who published each version."""


class PostgresVersions:
    """Versions, blobs and tags in PostgreSQL."""

    def transaction(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        raise NotImplementedError

    def _tuples(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self.transaction() as conn:
            return conn.execute(sql, params).fetchall()

    def put_version(self, version: VersionRecord, blobs: dict[str, bytes]) -> VersionRecord:
        """Store a version and its files' bytes; an id already stored is kept as it was (and returned)."""
        with self.transaction() as conn:
            with conn.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO blobs (hash, data) VALUES (%s, %s) ON CONFLICT DO NOTHING", list(blobs.items())
                )
            conn.execute(
                "INSERT INTO versions (version_id, flow, entry, files, note, created_at, author)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (version.version_id, version.flow, version.entry, json.dumps(version.files), version.note,
                 version.created_at, version.author),
            )  # fmt: skip
        found = self.get_version(version.version_id)
        assert found is not None
        return found

    def get_version(self, version_id: str) -> VersionRecord | None:
        """The version with exactly this id, or None."""
        rows = self._tuples(f"{_VERSION} WHERE version_id = %s", (version_id,))
        return _version(rows[0]) if rows else None

    def list_versions(self, flow: str) -> list[VersionRecord]:
        """Every version of a flow, newest first."""
        rows = self._tuples(f"{_VERSION} WHERE flow = %s ORDER BY created_at DESC, seq DESC", (flow,))
        return [_version(row) for row in rows]

    def blob(self, digest: str) -> bytes | None:
        """A file's bytes by their sha256, or None."""
        rows = self._tuples("SELECT data FROM blobs WHERE hash = %s", (digest,))
        return bytes(rows[0][0]) if rows else None

    def set_tag(self, flow: str, tag: str, version_id: str) -> TagRecord:
        """Point `tag` of `flow` at a version (created or moved)."""
        record = TagRecord(flow, tag, version_id)
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO tags VALUES (%s, %s, %s, %s) ON CONFLICT (flow, tag) DO UPDATE"
                " SET version_id = excluded.version_id, moved_at = excluded.moved_at",
                (flow, tag, version_id, record.moved_at),
            )
        return record

    def remove_tag(self, flow: str, tag: str) -> bool:
        """Remove a tag; False when the flow had none by that name."""
        with self.transaction() as conn:
            return conn.execute("DELETE FROM tags WHERE flow = %s AND tag = %s", (flow, tag)).rowcount > 0

    def list_tags(self, flow: str) -> list[TagRecord]:
        """The flow's tags, by name."""
        rows = self._tuples("SELECT flow, tag, version_id, moved_at FROM tags WHERE flow = %s ORDER BY tag", (flow,))
        return [TagRecord(*row) for row in rows]


def _version(row: tuple[Any, ...]) -> VersionRecord:
    version_id, flow, entry, files, note, created_at, author = row
    return VersionRecord(version_id, flow, entry, json.loads(files), note, created_at, author)
