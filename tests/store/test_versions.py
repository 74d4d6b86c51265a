"""Versions, their files and tags: the same contract in every store; runs filter by version."""

from __future__ import annotations

from studio.store import MemoryStore, RunRecord, SQLiteStore
from studio.store.base import RunFilter
from studio.store.versions import VersionRecord

Store = MemoryStore | SQLiteStore


def _version(version_id: str, created_at: str, note: str | None = None) -> VersionRecord:
    return VersionRecord(version_id, "f", "f.yaml", {"f.yaml": "h1", "sub.yaml": "h2"}, note, created_at)


def test_a_version_is_stored_once_with_its_files(store: Store) -> None:
    first = store.put_version(_version("aa11", "2026-01-01T00:00:00", "first"), {"h1": b"one", "h2": b"two"})
    again = store.put_version(_version("aa11", "2026-02-01T00:00:00", "again"), {"h1": b"one"})
    assert first == again and again.note == "first"  # the same id keeps its first record
    store.put_version(_version("bb22", "2026-03-01T00:00:00"), {"h1": b"one"})
    assert [v.version_id for v in store.list_versions("f")] == ["bb22", "aa11"]
    assert store.list_versions("other") == []
    assert store.get_version("aa11") == first and store.get_version("zz") is None
    assert (store.blob("h2"), store.blob("nope")) == (b"two", None)


def test_a_version_keeps_who_published_it(store: Store) -> None:
    record = _version("cc33", "2026-01-01T00:00:00", "by hand")
    record.author = "ann"
    store.put_version(record, {})
    store.put_version(_version("dd44", "2026-01-02T00:00:00"), {})
    assert [(v.version_id, v.author) for v in store.list_versions("f")] == [("dd44", None), ("cc33", "ann")]
    assert store.get_version("cc33").author == "ann"  # type: ignore[union-attr]


def test_tags_are_set_moved_and_removed(store: Store) -> None:
    for version_id in ("aa11", "bb22"):
        store.put_version(_version(version_id, "2026-01-01T00:00:00"), {})
    store.set_tag("f", "prod", "aa11")
    store.set_tag("f", "v1", "aa11")
    store.set_tag("f", "prod", "bb22")
    assert [(t.tag, t.version_id) for t in store.list_tags("f")] == [("prod", "bb22"), ("v1", "aa11")]
    assert store.remove_tag("f", "v1") and not store.remove_tag("f", "v1")
    assert [t.tag for t in store.list_tags("f")] == ["prod"] and store.list_tags("g") == []


def test_runs_filter_by_the_beginning_of_their_version(store: Store) -> None:
    store.create_run(RunRecord("r1", "f", None, "h", {}, version="abc123"))
    store.create_run(RunRecord("r2", "f", None, "h", {}, version="def456"))
    store.create_run(RunRecord("r3", "f", None, "h", {}))
    assert [r.run_id for r in store.query_runs(RunFilter(version="abc"))] == ["r1"]
    assert store.count_runs(RunFilter(version="def456")) == 1
    assert store.get_run("r1").version == "abc123"  # type: ignore[union-attr]
