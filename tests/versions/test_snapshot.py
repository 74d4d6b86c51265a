"""A version is the flow and every file it reads, named by its content hash."""

from __future__ import annotations

from pathlib import Path

from studio.store import SQLiteStore
from studio.versions.history import publish
from studio.versions.refs import Reference, materialise, resolve
from studio.versions.snapshot import take
from tests.versions.project import edit, make


def test_a_snapshot_holds_the_flow_its_sub_flow_and_its_model_script(tmp_path: Path) -> None:
    snapshot = take(make(tmp_path))
    assert snapshot.entry == "greet.yaml"
    assert sorted(snapshot.files) == ["greet.yaml", "scripts/model.yaml", "sub/shout.yaml"]
    assert len(snapshot.version_id) == 64


def test_the_same_content_gives_the_same_id_and_a_sub_flow_change_a_new_one(tmp_path: Path) -> None:
    main = make(tmp_path)
    store = SQLiteStore(tmp_path / "db" / "s.db")
    first = publish(store, main, tag="v1", note="first")
    again = publish(store, main)
    assert (again.version.version_id, again.new, first.new) == (first.version.version_id, False, True)
    assert again.version.note == "first"  # the stored version is immutable
    edit(tmp_path / "sub" / "shout.yaml", "upper }}!", "upper }}!!")  # only the sub-flow changes
    second = publish(store, main, tag="v2")
    assert second.new and second.version.version_id != first.version.version_id
    assert [v.version_id for v in store.list_versions("greet")] == [second.version.version_id, first.version.version_id]
    assert resolve(store, Reference("greet", "v1")).version_id == first.version.version_id
    assert resolve(store, Reference("greet", first.version.version_id[:8])).version_id == first.version.version_id
    store.close()


def test_a_version_is_materialised_as_it_was_published(tmp_path: Path) -> None:
    main = make(tmp_path / "project")
    store = SQLiteStore(tmp_path / "s.db")
    version = publish(store, main).version
    edit(tmp_path / "project" / "sub" / "shout.yaml", "upper }}!", "lower }}")
    path = materialise(store, version, tmp_path / "cache")
    assert path == tmp_path / "cache" / version.version_id / "greet.yaml"
    assert "upper }}!" in (path.parent / "sub" / "shout.yaml").read_text()
    assert take(path).version_id == version.version_id  # the materialised copy is the same content
    store.close()
