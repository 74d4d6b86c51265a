"""The editor's model: gestures become the smallest edits of the YAML file; nothing else changes."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

from studio.editor.document import new_flow_text
from studio.editor.editor import Editor
from studio.editor.layout import INPUTS, OUTPUTS, read_sidecar, sidecar_path
from studio.flow.spec import load_flow, load_flow_text
from tests.conftest import CLI, FIXTURES, FLOWS, SCRIPTS

EXAMPLES = sorted(p.name for p in FLOWS.glob("*.yaml"))


@pytest.fixture
def flows_copy(tmp_path: Path) -> Path:
    """The example flows with their parts and data, in a folder the test may write."""
    return Path(shutil.copytree(FLOWS, tmp_path / "flows"))


def _changed_lines(before: str, after: str) -> list[str]:
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]


@pytest.mark.parametrize("name", EXAMPLES)
def test_open_and_save_an_example_keeps_its_bytes(flows_copy: Path, name: str) -> None:
    path = flows_copy / name
    before = path.read_bytes()
    editor = Editor(path)
    assert editor.problems == []
    assert editor.save() == [sidecar_path(path)]
    assert path.read_bytes() == before
    assert set(read_sidecar(path)) == {INPUTS, OUTPUTS, *load_flow(path).spec.nodes}


def test_three_node_flow_from_scratch_validates_and_runs(tmp_path: Path, cli: CLI) -> None:
    path = tmp_path / "three.yaml"
    path.write_text(new_flow_text("three"), encoding="utf-8")
    editor = Editor(path)
    first, model, last = (
        editor.add_node("text.template"),
        editor.add_node("llm.generate"),
        editor.add_node("text.template"),
    )
    assert editor.connect(INPUTS, "+", first, "text")
    assert editor.connect(first, "text", model, "text")
    assert editor.connect(model, "text", last, "text")
    assert editor.connect(last, "text", OUTPUTS, "+")
    assert editor.problems == []
    editor.save()
    assert cli("validate", str(path)).code == 0
    result = cli("run", str(path), "-i", "text=hi", "--model", f"default=scripted/{SCRIPTS / 'editor.yaml'}", "--json")
    assert result.code == 0, result.err
    assert result.json()["outputs"] == {"text": "a scripted answer"}


@pytest.mark.parametrize(
    ("source", "target", "words"),
    [
        (("split", "chunks"), ("classify", "text"), ["list[str]", "str"]),
        (("classify", "confidence"), ("split", "text"), ["float | null", "str"]),
    ],
)
def test_incompatible_ports_are_refused_naming_both_types(
    tmp_path: Path, source: tuple[str, str], target: tuple[str, str], words: list[str]
) -> None:
    path = tmp_path / "types.yaml"
    path.write_text(new_flow_text("types"), encoding="utf-8")
    editor = Editor(path)
    assert editor.add_node("text.split") == "split" and editor.add_node("llm.classify") == "classify"
    before = editor.flow.text
    assert not editor.connect(*source, *target)
    assert editor.message is not None and editor.message.level == "error"
    assert all(word in editor.message.text for word in words) and "cannot connect" in editor.message.text
    assert editor.flow.text == before


def test_a_cycle_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cycle.yaml"
    shutil.copy(FIXTURES / "commented.yaml", path)
    editor = Editor(path)
    assert not editor.connect("shout", "text", "answer", "question")
    assert editor.message is not None and "cycle" in editor.message.text


def test_moving_a_node_changes_only_the_sidecar(flows_copy: Path) -> None:
    path = flows_copy / "headline.yaml"
    before = path.read_bytes()
    editor = Editor(path)
    editor.apply({"kind": "move", "positions": {"summarise": {"x": 999, "y": 111}}})
    editor.save()
    assert path.read_bytes() == before
    assert read_sidecar(path)["summarise"] == (999.0, 111.0)


def test_a_prompt_edit_changes_only_that_prompt_and_keeps_comments(tmp_path: Path) -> None:
    path = tmp_path / "commented.yaml"
    shutil.copy(FIXTURES / "commented.yaml", path)
    before = path.read_text(encoding="utf-8")
    editor = Editor(path)
    editor.edit_config("answer", {"prompt": "Q: {{ question }}\nA:"})
    editor.save()
    after = path.read_text(encoding="utf-8")
    assert _changed_lines(before, after) == [
        '-      prompt: "Question: {{ question }}\\nAnswer:"',
        '+      prompt: "Q: {{ question }}\\nA:"',
    ]
    assert [line for line in before.splitlines() if "#" in line] == [line for line in after.splitlines() if "#" in line]
    assert load_flow_text(after).spec.nodes["answer"].config["prompt"] == "Q: {{ question }}\nA:"


def test_an_edit_of_a_hand_formatted_file_changes_only_its_lines(tmp_path: Path) -> None:
    path = tmp_path / "messy.yaml"
    shutil.copy(FIXTURES / "messy.yaml", path)
    before = path.read_text(encoding="utf-8")
    editor = Editor(path)
    editor.edit_field("write", "description", "Say it")
    assert _changed_lines(before, editor.flow.text) == ["+    description: Say it"]


def test_undo_and_redo_restore_exact_texts(tmp_path: Path) -> None:
    path = tmp_path / "commented.yaml"
    shutil.copy(FIXTURES / "commented.yaml", path)
    editor = Editor(path)
    original = editor.flow.text
    node = editor.add_node("llm.classify")
    added = editor.flow.text
    editor.delete([node, "shout"], [])
    assert "shout" not in editor.flow.text and node not in editor.layout
    editor.undo()
    assert editor.flow.text == added and node in editor.layout
    editor.undo()
    assert editor.flow.text == original and not editor.dirty
    editor.redo()
    assert editor.flow.text == added
    assert editor.history.can_redo


def test_deleting_a_node_removes_its_wires_and_outputs(flows_copy: Path) -> None:
    path = flows_copy / "headline.yaml"
    editor = Editor(path)
    editor.delete(["summarise"], [])
    flow = load_flow_text(editor.flow.text)
    assert "summarise" not in flow.spec.nodes
    assert "summary" not in flow.spec.outputs
    assert "summary" not in flow.spec.nodes["headline"].inputs
    assert editor.problems and editor.problems[0].node == "headline"  # its template still reads `summary`


def test_deleting_an_edge_removes_one_wire(flows_copy: Path) -> None:
    editor = Editor(flows_copy / "headline.yaml")
    editor.delete([], ["$inputs.audience->headline.audience", "title_case.text->$outputs.headline"])
    flow = load_flow_text(editor.flow.text)
    assert "audience" not in flow.spec.nodes["headline"].inputs
    assert "headline" not in flow.spec.outputs
    assert flow.spec.nodes["headline"].inputs["summary"] == "$summarise.text"


def test_a_new_template_variable_comes_from_the_plus_port(flows_copy: Path) -> None:
    editor = Editor(flows_copy / "headline.yaml")
    assert editor.connect(INPUTS, "article", "headline", "+")
    node = load_flow_text(editor.flow.text).spec.nodes["headline"]
    assert node.inputs["article"] == "$inputs.article"
    assert node.config["prompt"].endswith("\n{{ article }}")
    assert editor.problems == []


def test_without_a_sidecar_every_node_gets_its_own_place(flows_copy: Path) -> None:
    editor = Editor(flows_copy / "route-question.yaml")
    positions = list(editor.layout.values())
    assert len(positions) == len(set(positions)) == len(load_flow(flows_copy / "route-question.yaml").spec.nodes) + 2
    assert editor.layout[INPUTS][0] < editor.layout[OUTPUTS][0]


def test_events_apply_once_each(tmp_path: Path) -> None:
    path = tmp_path / "events.yaml"
    path.write_text(new_flow_text("events"), encoding="utf-8")
    editor = Editor(path)
    queued = {"session": "a", "events": [{"seq": 1, "kind": "add_node", "type": "text.template", "x": 5, "y": 6}]}
    assert editor.apply_events(queued)
    assert not editor.apply_events(queued)  # the same queue again: nothing new
    queued["events"].append({"seq": 2, "kind": "select", "node": None})
    assert editor.apply_events(queued) and editor.selected is None
    assert list(editor.flow.nodes()) == ["template"] and editor.layout["template"] == (5.0, 6.0)
    assert editor.apply_events({"session": "b", "events": [{"seq": 1, "kind": "undo"}]})  # a new mount starts again
    assert list(editor.flow.nodes()) == []


def test_bad_yaml_in_the_yaml_tab_is_refused_and_nothing_changes(flows_copy: Path) -> None:
    editor = Editor(flows_copy / "headline.yaml")
    before = editor.flow.text
    with pytest.raises(Exception, match=r"line"):
        editor.replace_text("flowstudio: 1\nname: [unclosed\n")
    assert editor.flow.text == before


def test_edge_ids_the_editor_did_not_make_change_nothing(flows_copy: Path) -> None:
    editor = Editor(flows_copy / "headline.yaml")
    before = editor.flow.text
    editor.delete([], ["garbage", "a->b", "a->b.c", "x.y->headline.summary"])
    assert editor.flow.text == before


@pytest.mark.parametrize(
    ("source", "target", "words"),
    [
        ((INPUTS, "+"), (OUTPUTS, "+"), "put a node between"),
        ((INPUTS, "+"), ("headline", "+"), "drag from a named input"),
        ((INPUTS, "+"), ("headline", "nope"), "has no input 'nope'"),
        (("summarise", "nope"), ("headline", "summary"), "has no output 'nope'"),
        (("title_case", "text"), ("headline", "summary"), "cycle"),
    ],
)
def test_wires_that_make_no_sense_are_refused(
    flows_copy: Path, source: tuple[str, str], target: tuple[str, str], words: str
) -> None:
    editor = Editor(flows_copy / "headline.yaml")
    before = editor.flow.text
    assert not editor.connect(*source, *target)
    assert editor.message is not None and words in editor.message.text
    assert editor.flow.text == before


@pytest.mark.parametrize("node_type", ["text.template", "llm.generate", "llm.classify", "control.map", "tool.python"])
def test_the_palette_card_is_the_card_python_draws_for_the_added_node(tmp_path: Path, node_type: str) -> None:
    """The canvas draws a palette click's card before Python answers: it must be Python's card (whose
    errors may add what checking the whole flow finds, an unwired input)."""
    from studio.editor.canvas import palette

    path = tmp_path / "cards.yaml"
    path.write_text(new_flow_text("cards"), encoding="utf-8")
    editor = Editor(path)
    node_id = editor.add_node(node_type, (10.0, 20.0))
    drawn = next(n for n in editor.graph()["nodes"] if n["id"] == node_id)
    card = next(entry["card"] for entry in palette() if entry["type"] == node_type)
    unplaced = {k: v for k, v in drawn.items() if k not in ("id", "label", "x", "y", "status", "errors")}
    assert {**card, "id": node_id, "label": node_id, "errors": []} == {
        **unplaced,
        "id": node_id,
        "label": node_id,
        "errors": [],
    }
    assert set(card["errors"]) <= set(drawn["errors"])


def test_an_added_node_takes_the_id_the_canvas_proposes_when_it_is_free(tmp_path: Path) -> None:
    path = tmp_path / "ids.yaml"
    path.write_text(new_flow_text("ids"), encoding="utf-8")
    editor = Editor(path)
    editor.apply({"kind": "add_node", "type": "text.template", "x": 0, "y": 0, "id": "template"})
    editor.apply({"kind": "add_node", "type": "text.template", "x": 0, "y": 0, "id": "template"})  # taken
    editor.apply({"kind": "add_node", "type": "text.template", "x": 0, "y": 0, "id": "Bad-Id"})  # not an id
    editor.apply({"kind": "add_node", "type": "text.template", "x": 0, "y": 0, "id": "intro"})
    assert list(editor.flow.nodes()) == ["template", "template_2", "template_3", "intro"]
