"""History through AppTest: a flow's versions with tags, notes and scores, the diff naming the changed
node and field, Publish and Set tag, Restore into the editor, and a promotion started from the page."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from studio.app import launches
from studio.app.promote_panel import promote_args, result_of
from studio.app.settings import DIR_ENV
from studio.editor.drafts import keep_draft
from studio.store import SQLiteStore
from tests.app.history_seed import published
from tests.versions.project import edit, make

TIMEOUT = 30


def _history_page() -> None:
    from studio.app.history_page import render

    render()


def _studio() -> None:
    """History and the Editor, navigable as in the app."""
    import streamlit as st

    from studio.app.links import EDITOR, HISTORY
    from studio.app.main import registered

    st.navigation(registered(HISTORY, EDITOR)).run()


def _box(app: AppTest, label: str) -> Any:
    return next(box for box in app.selectbox if box.label == label)


def _field(app: AppTest, label: str) -> Any:
    return next(field for field in app.text_input if field.label == label)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, list[str]]:
    main, db, ids = published(tmp_path)
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    monkeypatch.setenv(DIR_ENV, str(main.parent))
    return main, db, ids


def test_versions_table_and_the_diff_naming_node_and_field(project: tuple[Path, Path, list[str]]) -> None:
    main, _, (first, second) = project
    app = AppTest.from_function(_history_page, default_timeout=TIMEOUT).run()
    assert not app.exception, app.exception
    table = app.dataframe[0].value
    assert list(table["version"]) == [second[:12], first[:12]] and list(table["tags"]) == ["prod", "v1"]
    assert list(table["note"]) == ["warmer", "first"] and list(table["on disk"]) == ["yes", ""]
    assert list(table["scores"]) == ["", "exact 0.750 ±0.33 (4)"], "the batch run on v1"
    assert any("The file on disk is version" in c.value for c in app.caption)
    codes = [c.value for c in app.code]
    assert any("-Say {{ word }} politely." in c and "+Say {{ word }} warmly." in c for c in codes)
    assert any("`say`" in m.value and "`config.prompt`" in m.value for m in app.markdown)
    _box(app, "To").select(first).run()
    assert any("No differences" in s.value for s in app.success)
    edit(main, "{type: str}", "{type: str, description: a word}")
    edit(main.parent / "sub" / "shout.yaml", "| upper }}!", "| upper }}!!")
    app.run()
    assert any("the flow file only" in c.value and "sub/shout.yaml" in c.value for c in app.caption)
    _box(app, "To").select("working file").run()
    assert not app.exception, app.exception
    rest = app.code[-1].value.splitlines()
    assert "~ input word: description: None -> 'a word'" in rest and "~ file sub/shout.yaml" in rest, rest
    assert any("not published yet" in c.value for c in app.caption)


def test_publish_and_set_tag_from_the_page(project: tuple[Path, Path, list[str]]) -> None:
    main, db, (first, _) = project
    edit(main, "warmly", "kindly")
    app = AppTest.from_function(_history_page, default_timeout=TIMEOUT).run()
    _field(app, "Tag (optional)").input("v3")
    _field(app, "Note (optional)").input("kinder")
    app.button(key="history_publish_go").click().run()
    assert not app.exception, app.exception
    table = app.dataframe[0].value
    assert table["tags"].iloc[0] == "v3" and table["note"].iloc[0] == "kinder" and len(table) == 3
    _box(app, "Version").select(first).run()
    _field(app, "Tag").input("prod").run()
    app.button(key="history_tag_go").click().run()
    store = SQLiteStore(db)
    try:
        assert {t.tag: t.version_id for t in store.list_tags("greet")}["prod"] == first, "prod rolled back to v1"
    finally:
        store.close()
    assert _box(app, "Version").value == first, "the picked version stays picked under its new label"
    assert _field(app, "Tag").value == "" and _field(app, "Tag (optional)").value == "", "the fields start empty again"
    _field(app, "Tag").input("1bad").run()
    app.button(key="history_tag_go").click().run()
    assert any("tag '1bad'" in e.value for e in app.error)


def test_restore_puts_the_version_into_the_editor_unsaved(project: tuple[Path, Path, list[str]]) -> None:
    main, _, (first, _) = project
    app = AppTest.from_function(_studio, default_timeout=TIMEOUT).run()
    assert not app.exception, app.exception
    _box(app, "Version").select(first).run()
    app.button(key="history_restore").click().run()
    assert not app.exception, app.exception
    assert app.selectbox(key="editor_flow").value == main, "the Editor opened the flow"
    editor = app.session_state["editors"][str(main)]
    assert "politely" in editor.flow.text and editor.dirty, "the old prompt, not saved yet"
    assert "warmly" in main.read_text(), "the file is unchanged until Save"


def test_result_of_reads_the_last_json_and_args_follow_the_form(tmp_path: Path) -> None:
    log = 'progress…\n{\n  "promoted": false,\n  "tag": "prod"\n}\n'
    assert result_of(log) == {"promoted": False, "tag": "prod"}
    assert result_of("Error: bad\n") is None and result_of('{"promoted": true}') == {"promoted": True}
    data = tmp_path / "d.jsonl"
    args = promote_args("prod", data, ["--expect", "loud=want"], "exact", 0.1)
    assert args == ["--tag", "prod", "--data", str(data), "--expect", "loud=want", "--metric", "exact",
                    "--min-delta", "0.1"]  # fmt: skip


def test_a_promotion_started_as_the_page_starts_it_moves_the_tag(tmp_path: Path) -> None:
    main, db, (first, _) = published(tmp_path)
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"word": w, "want": f"{w.upper()}!"}) + "\n" for w in ("hi", "ok")))
    args = promote_args("stable", data, ["--map", "word=word", "--expect", "loud=want"], "exact", 0.0)
    record = launches.start(db, "promote", f"greet@{first[:16]}", args, cwd=main.parent)
    deadline = time.monotonic() + 60
    while launches.alive(record.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    found = result_of(launches.log_tail(record))
    assert found is not None, launches.log_tail(record)
    assert found["promoted"] and found["candidate"]["score"] == 1.0
    store = SQLiteStore(db)
    try:
        assert {t.tag: t.version_id for t in store.list_tags("greet")}["stable"] == first
    finally:
        store.close()


def test_a_flow_never_published_offers_publish(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    main = make(tmp_path / "flows")
    monkeypatch.setenv("FLOWSTUDIO_DB", str(tmp_path / "flowstudio.db"))
    monkeypatch.setenv(DIR_ENV, str(main.parent))
    app = AppTest.from_function(_history_page, default_timeout=TIMEOUT).run()
    assert not app.exception, app.exception
    assert any("No published version yet" in i.value for i in app.info) and not app.dataframe
    app.button(key="history_publish_go").click().run()
    assert len(app.dataframe[0].value) == 1 and any("The file on disk is version" in c.value for c in app.caption)
    assert _box(app, "From").value == _box(app, "Version").value and _box(app, "To").value == "working file"
    assert any("No differences" in s.value for s in app.success)


def test_restore_keeps_an_earlier_draft_one_undo_away(project: tuple[Path, Path, list[str]]) -> None:
    main, _, (first, _) = project
    keep_draft(main, main.read_text().replace("warmly", "gently"))
    app = AppTest.from_function(_studio, default_timeout=TIMEOUT).run()
    _box(app, "Version").select(first).run()
    app.button(key="history_restore").click().run()
    assert not app.exception, app.exception
    editor = app.session_state["editors"][str(main)]
    assert "politely" in editor.flow.text
    editor.undo()
    assert "gently" in editor.flow.text, "the draft of an earlier visit, one undo back"
