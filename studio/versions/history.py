"""Publishing versions and moving tags: the operations behind `publish`, `versions`, `tag`, `untag`."""

from __future__ import annotations

import getpass
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from studio.errors import InputError
from studio.store.versions import TagRecord, VersionRecord
from studio.versions.snapshot import Snapshot, take

TAG = re.compile(r"[A-Za-z][A-Za-z0-9._-]{0,63}")
"""A tag's name: starts with a letter, so it can never be taken for an id prefix."""


class VersionStore(Protocol):
    """What the version operations need from a store (both stores have it)."""

    def put_version(self, version: VersionRecord, blobs: dict[str, bytes]) -> VersionRecord:
        """Store a version; an id already stored is kept as it was."""
        ...

    def get_version(self, version_id: str) -> VersionRecord | None:
        """The version with exactly this id."""
        ...

    def list_versions(self, flow: str) -> list[VersionRecord]:
        """Every version of a flow, newest first."""
        ...

    def blob(self, digest: str) -> bytes | None:
        """A file's bytes by their sha256."""
        ...

    def set_tag(self, flow: str, tag: str, version_id: str) -> TagRecord:
        """Create or move a tag."""
        ...

    def remove_tag(self, flow: str, tag: str) -> bool:
        """Remove a tag; False when there was none."""
        ...

    def list_tags(self, flow: str) -> list[TagRecord]:
        """The flow's tags."""
        ...


@dataclass(frozen=True)
class Published:
    """What `publish` did."""

    version: VersionRecord
    """The version stored (or the one already stored with the same content)."""
    new: bool
    """False when the same content had been published before."""
    tag: str | None = None
    """The tag now pointing at it."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """What the snapshot left out."""


def check_tag(tag: str) -> str:
    """The tag, when it is a valid name; InputError otherwise."""
    if not TAG.fullmatch(tag):
        raise InputError(f"tag {tag!r}: a letter, then letters, digits, '.', '_' or '-' (64 at most)", field="TAG")
    return tag


def publish(
    store: VersionStore, flow: str | Path, *, tag: str | None = None, note: str | None = None, author: str | None = None
) -> Published:
    """Store the flow and every file it reads as an immutable version (id: content hash); tag it."""
    if tag is not None:
        check_tag(tag)
    snapshot = take(flow)
    return store_snapshot(store, snapshot, tag=tag, note=note, author=author)


def account_name() -> str | None:
    """Who publishes or reviews when nobody says: the user this process runs as ($LOGNAME, $USER, else the
    account's name); None when there is none."""
    try:
        return getpass.getuser() or None
    except (KeyError, OSError):  # no such variables and no passwd entry (a bare container)
        return None


def store_snapshot(
    store: VersionStore,
    snapshot: Snapshot,
    *,
    tag: str | None = None,
    note: str | None = None,
    author: str | None = None,
) -> Published:
    """Store a snapshot as a version; the same content keeps its first record (note and author).
    `author` defaults to `account_name()`."""
    digests = snapshot.digests
    who = author if author is not None else account_name()
    record = VersionRecord(snapshot.version_id, snapshot.flow, snapshot.entry, digests, note, author=who)
    new = store.get_version(record.version_id) is None
    blobs = {digests[path]: data for path, data in snapshot.files.items()}
    stored = store.put_version(record, blobs)
    if tag is not None:
        store.set_tag(stored.flow, tag, stored.version_id)
    return Published(stored, new, tag, snapshot.notes)


def tags_by_version(store: VersionStore, flow: str) -> dict[str, list[str]]:
    """Each version id's tags."""
    found: dict[str, list[str]] = {}
    for record in store.list_tags(flow):
        found.setdefault(record.version_id, []).append(record.tag)
    return found


def history(store: Any, flow: str) -> list[dict[str, Any]]:
    """`flowstudio versions NAME --json`: each version newest first, with its tags and batch scores."""
    tags = tags_by_version(store, flow)
    scores = batch_scores(store, flow)
    return [
        {
            "version": v.version_id,
            "tags": tags.get(v.version_id, []),
            "created_at": v.created_at,
            "note": v.note,
            "author": v.author,
            "files": len(v.files),
            "batches": scores.get(v.version_id, []),
        }
        for v in store.list_versions(flow)
    ]


def batch_scores(store: Any, flow: str) -> dict[str, list[dict[str, Any]]]:
    """The batches run on each version (by the `version` their config records): id, metric, score."""
    found: dict[str, list[dict[str, Any]]] = {}
    for experiment in store.list_experiments(limit=1000, kind="batch"):
        version = experiment.config.get("version")
        if experiment.flow != flow or not version or experiment.summary is None:
            continue
        found.setdefault(version, []).append(
            {"experiment": experiment.experiment_id, "created_at": experiment.created_at, **_score(experiment.summary)}
        )
    return found


def _score(summary: dict[str, Any]) -> dict[str, Any]:
    """The headline numbers of a batch summary."""
    keys = ("metric", "score", "score_ci", "examples", "failed")
    return {key: summary[key] for key in keys if key in summary}
