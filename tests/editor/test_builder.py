"""What the builder adds to the editing model: facts and guard links on the canvas, rename,
duplicate, last valid ports, checked form edits, the flow's inputs/outputs/models as tables."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from studio.app.flow_tables import (
    input_rows,
    inputs_from_rows,
    model_rows,
    models_from_rows,
    outputs_from_rows,
    references,
)
from studio.editor.editor import Editor
from studio.editor.fields import as_yaml, changes, config_fields
from studio.errors import FlowError
from tests.conftest import FIXTURES, FLOWS


@pytest.fixture
def route(tmp_path: Path) -> Editor:
    shutil.copy(FIXTURES / "route-guarded.yaml", tmp_path / "route-question.yaml")
    return Editor(tmp_path / "route-question.yaml")


def _node(editor: Editor, node_id: str) -> dict:
    return next(n for n in editor.graph()["nodes"] if n["id"] == node_id)


def test_the_canvas_gets_guards_models_descriptions_and_sub_flows(route: Editor) -> None:
    math = _node(route, "math")
    assert math["when"] == "route.label == 'math'" and math["model"] == "default"
    assert math["description"].startswith("Completion-style")
    assert _node(route, "answer")["model"] is None  # control.merge uses no model
    edges = route.graph()["edges"]
    guards = {(e["source"], e["sourceHandle"], e["target"]) for e in edges if e["kind"] == "guard"}
    assert guards == {("route", "label", "math"), ("route", "label", "chat")}
    conditional = {e["target"] for e in edges if e.get("conditional")}
    assert conditional == {"math", "chat"}
    assert {("math", "answer"), ("chat", "answer")} <= {(e["source"], e["target"]) for e in edges}  # a list of refs
    summarise = Editor(FLOWS / "summarise-reviews.yaml")
    assert _node(summarise, "each")["subflow"] == "parts/summarise-one.yaml"


def test_the_auto_layout_puts_a_guard_s_source_before_the_guarded_node(route: Editor) -> None:
    assert route.layout["route"][0] < route.layout["math"][0]


def test_rename_rewrites_every_reference(route: Editor) -> None:
    route.rename("route", "router")
    text = route.flow.text
    assert "$route." not in text and "route.label ==" not in text
    assert "$router.label" in text and "when: router.label == 'math'" in text
    assert route.problems == [] and "router" in route.layout
    with pytest.raises(FlowError, match="already"):
        route.rename("router", "math")
    with pytest.raises(FlowError, match="not a node id"):
        route.rename("router", "Bad id")


def test_duplicate_copies_a_node_below_its_original(route: Editor) -> None:
    (copy,) = route.duplicate(["chat"], (0, 200))
    assert copy == "chat_2" and route.flow.node("chat_2")["when"] == "route.label == 'chat'"
    assert route.layout["chat_2"] == (route.layout["chat"][0], route.layout["chat"][1] + 200)
    assert route.problems == []


def test_a_bad_template_keeps_the_node_s_last_valid_ports(route: Editor) -> None:
    route.graph()
    route.edit_config("chat", {"prompt": "{{ question "})
    chat = _node(route, "chat")
    assert chat["outputs"] == [{"name": "text", "type": "str"}]
    assert [p["name"] for p in chat["inputs"]] == ["question", "messages"]  # messages: llm.generate's optional turns
    assert chat["errors"] and "end of template" in chat["errors"][0]


def test_a_form_edit_that_adds_a_problem_is_refused_whole(route: Editor) -> None:
    before, steps = route.flow.text, len(route.history.snapshots)

    def change() -> None:
        route.edit_field("chat", "description", "fine")
        route.edit_field("chat", "when", "nosuch.label == 'x'")

    refused = route.checked_edit(change)
    assert refused and "nosuch" in refused and refused.startswith("route-question.yaml:")
    assert route.flow.text == before and len(route.history.snapshots) == steps
    assert route.checked_edit(lambda: route.edit_field("chat", "timeout_s", 5.0)) is None
    assert "timeout_s: 5.0" in route.flow.text and len(route.history.snapshots) == steps + 1


def test_inputs_outputs_and_models_round_trip_through_tables(route: Editor) -> None:
    rows = input_rows(route.flow.section("inputs"))
    assert rows == [{"name": "question", "type": "str", "description": "A question from the user", "default": ""}]
    rows.append({"name": "tries", "type": "int", "description": None, "default": "3"})
    route.edit_section("inputs", inputs_from_rows(rows))
    assert "  tries: {type: int, default: 3}\n" in route.flow.text
    assert "  question: {type: str, description: A question from the user}\n" in route.flow.text  # untouched
    route.edit_outputs(outputs_from_rows([{"name": "answer", "value": "$answer.value"}]))
    assert "route: $route.label" not in route.flow.text
    assert "$route.label" in references(route.flow)
    models = model_rows(route.flow.section("models"))
    models.append({"alias": "big", "model": "openai/gpt-4o-mini", "temperature": float("nan"), "api_key": "OPENAI_KEY"})
    route.edit_section("models", models_from_rows(models))
    assert "big: {model: openai/gpt-4o-mini, api_key: $env.OPENAI_KEY}" in route.flow.text
    assert route.problems == []
    with pytest.raises(FlowError, match="environment variable"):
        models_from_rows([{"alias": "x", "model": "m", "api_key": "sk-123 456"}])
    with pytest.raises(FlowError, match="twice"):
        inputs_from_rows([{"name": "a"}, {"name": "a"}])


def test_labels_are_chips_and_demos_a_table_that_submit_yaml() -> None:
    fields = {f.key: f for f in config_fields("llm.classify")}
    assert fields["labels"].shape == "chips" and fields["demos"].shape == "table"
    config = {"labels": ["math", "chat"], "demos": [{"text": "hi", "label": "chat"}]}
    submitted = {
        "labels": as_yaml(fields["labels"], ["math", "chat", "other"]),
        "demos": as_yaml(fields["demos"], [{"text": "hi", "label": "chat"}, {"text": None, "label": float("nan")}]),
    }
    assert changes(list(fields.values()), config, submitted) == {"labels": ["math", "chat", "other"]}


def test_tidy_lays_the_flow_out_by_its_wires_as_one_undoable_step_kept_by_save(route: Editor) -> None:
    from studio.editor.layout import read_sidecar

    laid_out = dict(route.layout)
    route.move({node: (900.0 - 40 * i, 50.0 * i) for i, node in enumerate(laid_out)})  # scattered by hand
    scattered = dict(route.layout)
    route.apply({"kind": "tidy"})
    assert route.layout == laid_out and route.layout != scattered and route.refit
    assert route.layout["$inputs"][0] < route.layout["route"][0] < route.layout["$outputs"][0]  # left to right
    route.undo()
    assert route.layout == scattered
    route.redo()
    route.save()
    assert read_sidecar(route.path) == laid_out
