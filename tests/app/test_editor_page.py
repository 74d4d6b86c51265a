"""The Editor page's logic through Streamlit's AppTest (the canvas itself is tested in a browser)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from studio.app.model_picker import verdict
from studio.app.settings import DIR_ENV
from studio.flow.spec import ModelSpec
from tests.conftest import FIXTURES

TIMEOUT = 30


def _editor_page() -> None:
    from studio.app.editor_page import render

    render()


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(FIXTURES / "commented.yaml", tmp_path / "commented.yaml")
    monkeypatch.setenv(DIR_ENV, str(tmp_path))
    monkeypatch.setenv("FLOWSTUDIO_DB", str(tmp_path / "runs.db"))
    return tmp_path


def _open(folder: Path) -> AppTest:
    page = AppTest.from_function(_editor_page, default_timeout=TIMEOUT)
    page.run()
    assert not page.exception, page.exception
    return page


def folder_path(page: AppTest) -> Path:
    return Path(page.session_state["editor_flow"])


def test_a_file_changed_on_disk_is_reloaded_when_nothing_here_is_unsaved(folder: Path) -> None:
    page = _open(folder)
    path = folder / "commented.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("Answer:", "A:"), encoding="utf-8")
    page.run()
    assert "A:" in page.session_state["editors"][str(path)].flow.text
    assert not page.warning


def test_unsaved_work_is_kept_when_the_file_changes_on_disk(folder: Path) -> None:
    page = _open(folder)
    path = folder / "commented.yaml"
    editor = page.session_state["editors"][str(path)]
    editor.edit_field("answer", "description", "kept")
    path.write_text(path.read_text(encoding="utf-8").replace("Answer:", "A:"), encoding="utf-8")
    page.run()
    assert "changed on disk" in page.warning[0].value
    assert "description: kept" in page.session_state["editors"][str(path)].flow.text
    page.button(key="editor_reload").click().run()
    assert "description: kept" not in page.session_state["editors"][str(path)].flow.text


def test_a_new_flow_is_created_without_typing(folder: Path) -> None:
    page = _open(folder)
    page.button(key="new_flow_create").click().run()
    assert (folder / "new-flow.yaml").exists()
    assert folder_path(page) == folder / "new-flow.yaml"


def test_the_yaml_view_refuses_bad_yaml_and_changes_nothing(folder: Path) -> None:
    page = _open(folder)
    before = (folder / "commented.yaml").read_text(encoding="utf-8")
    page.segmented_control(key="editor_view").set_value("YAML").run()
    area = next(a for a in page.text_area if a.label == "YAML")
    area.set_value("flowstudio: 1\nname: [unclosed\n")
    page.button(key="editor_apply_yaml").click().run()
    assert page.error and "commented.yaml:3: invalid YAML" in page.error[0].value  # file and line
    assert page.session_state["editors"][str(folder / "commented.yaml")].flow.text == before


def test_a_link_opens_the_flow_it_names_and_then_follows_the_picker(folder: Path) -> None:
    shutil.copy(FIXTURES / "chain.yaml", folder / "chain.yaml")
    page = AppTest.from_function(_editor_page, default_timeout=TIMEOUT)
    page.query_params["flow"] = "commented.yaml"  # not the first file: the link, not the default
    page.run()
    assert not page.exception, page.exception
    assert folder_path(page) == folder / "commented.yaml"
    page.selectbox(key="editor_flow").select(folder / "chain.yaml").run()
    assert folder_path(page) == folder / "chain.yaml", "the picker wins over the URL it wrote"
    assert page.query_params["flow"] == "chain.yaml", "and the URL follows, to be shared"


def test_every_node_type_added_fresh_opens_a_whole_inspector_whose_apply_changes_nothing(folder: Path) -> None:
    """A fresh llm.generate's demos table had `text` twice (input and output): no Apply was drawn."""
    from studio.runtime import registry

    page = _open(folder)
    editor = page.session_state["editors"][str(folder / "commented.yaml")]
    for node_type in registry.keys():  # noqa: SIM118 - a module function, not a dict
        node_id = editor.add_node(node_type)
        page.run()
        assert not page.exception, (node_type, page.exception)
        assert f"#### {node_id}" in [m.value for m in page.markdown]
        before = editor.flow.text
        next(b for b in page.button if b.label == "Apply").click().run()
        assert not page.exception, (node_type, page.exception)
        assert editor.flow.text == before, node_type  # an untouched form writes nothing


def _offered(page: AppTest) -> bool:
    """Whether the page offers a draft of an earlier visit."""
    return any("unsaved edits from an earlier visit" in text.value for text in page.markdown)


def test_unsaved_edits_are_kept_as_a_draft_offered_back_to_the_next_session(folder: Path) -> None:
    from studio.editor.drafts import draft_path

    path = folder / "commented.yaml"
    before = path.read_text(encoding="utf-8")
    page = _open(folder)
    page.session_state["editors"][str(path)].edit_field("answer", "description", "kept")
    page.run()
    assert "description: kept" in draft_path(path).read_text(encoding="utf-8")  # beside the flow, hidden
    assert path.read_text(encoding="utf-8") == before
    later = _open(folder)  # a reload or a new tab: a new session
    assert _offered(later)
    assert "description: kept" not in later.session_state["editors"][str(path)].flow.text
    later.button(key="editor_draft_restore").click().run()
    editor = later.session_state["editors"][str(path)]
    assert "description: kept" in editor.flow.text and editor.dirty and not _offered(later)
    assert any("Draft restored" in caption.value for caption in later.caption)  # its row stays, one line
    later.button(key="editor_save").click().run()
    assert not draft_path(path).exists() and "description: kept" in path.read_text(encoding="utf-8")


def test_a_discarded_draft_is_gone(folder: Path) -> None:
    from studio.editor.drafts import draft_path

    path = folder / "commented.yaml"
    page = _open(folder)
    page.session_state["editors"][str(path)].edit_field("answer", "description", "dropped")
    page.run()
    later = _open(folder)
    later.button(key="editor_draft_discard").click().run()
    assert not draft_path(path).exists()
    assert "dropped" not in later.session_state["editors"][str(path)].flow.text and not _offered(later)


def test_a_model_is_chosen_from_a_list_or_typed_with_typed_parameters(folder: Path) -> None:
    page = _open(folder)
    editor = page.session_state["editors"][str(folder / "commented.yaml")]
    page.segmented_control(key="editor_panel").set_value("Flow").run()
    provider = next(s for s in page.selectbox if s.label == "provider")
    assert [o.split(" ")[0] for o in provider.options[:3]] == ["local", "scripted", "openai"]  # shown with words
    assert "anthropic" in provider.options
    assert next(s for s in page.selectbox if s.label == "model").options == ["scripted"]
    next(n for n in page.number_input if n.label == "temperature").set_value(0.3)
    next(b for b in page.button if b.label == "Apply model").click().run()
    assert not page.exception, page.exception
    default = dict(editor.flow.section("models")["default"])
    assert default["model"] == "scripted" and default["temperature"] == 0.3
    assert default["script"] == [{"reply": "ok"}]  # what the picker does not show stays
    assert "answered its check" in page.success[0].value
    next(s for s in page.selectbox if s.label == "provider").set_value("local").run()
    assert next(s for s in page.selectbox if s.label == "model").options == ["local/smollm2"]
    refused, _ = verdict("default", ModelSpec(model="local/nosuch"), folder)  # typed: the browser test types it
    assert refused is not None and "unknown local model 'local/nosuch'" in refused  # refused at Apply, not at Run
    refused, _ = verdict("default", ModelSpec(model="scripted", script=[{"reply": "ok"}]), folder)
    assert refused is None
    refused, _ = verdict("default", ModelSpec(model="scripted"), folder)  # no script: nothing could answer
    assert refused is not None and "script:" in refused
    drill = ModelSpec(model="scripted", script=[{"error": {"kind": "auth"}}])  # a fault drill fails on purpose
    refused, note = verdict("default", drill, folder)
    assert refused is None and note.startswith("Applied. Its script answers") and "auth" in note


def test_an_alias_is_removed_unless_a_node_uses_it(folder: Path) -> None:
    page = _open(folder)
    editor = page.session_state["editors"][str(folder / "commented.yaml")]
    default = dict(editor.flow.section("models")["default"])
    editor.edit_section("models", {"default": default, "spare": {"model": "local/smollm2"}})
    page.segmented_control(key="editor_panel").set_value("Flow").run()
    page.button(key=f"model_pick_remove-{editor.version}-default").click().run()
    assert "Not applied" in page.error[0].value and "default" in editor.flow.section("models"), page.error[0].value
    page.selectbox(key="model_pick_alias").set_value("spare").run()
    page.button(key=f"model_pick_remove-{editor.version}-spare").click().run()
    assert not page.exception, page.exception
    assert list(editor.flow.section("models")) == ["default"] and "Removed spare." in page.success[0].value
