"""The canvas and inspector cover the new node types: one handle per switch branch, typed
`messages` handles, inspector fields from each Config, and the JSON Schema lists them."""

from __future__ import annotations

import shutil
from pathlib import Path

from studio.editor.editor import Editor
from studio.editor.fields import config_fields
from studio.editor.ports import node_ports
from studio.runtime.nodedoc import full_schema
from tests.conftest import FLOWS


def test_a_switch_has_one_output_handle_per_branch(tmp_path: Path) -> None:
    config = {"cases": {"refund": "billing", "charge": "billing", "crash": "bug"}, "default": "other"}
    ports = node_ports("control.switch", config, {"value": "$x.label"}, tmp_path)
    assert ports.errors == []
    assert [p.name for p in ports.outputs] == ["branch", "billing", "bug", "other"]
    assert [(p.name, p.required) for p in ports.inputs] == [("value", True), ("payload", False)]


def test_the_route_question_canvas_draws_the_branches_and_wires_from_them(tmp_path: Path) -> None:
    flows = Path(shutil.copytree(FLOWS, tmp_path / "flows"))
    editor = Editor(flows / "route-question.yaml")
    assert editor.problems == []
    graph = editor.graph()
    route = next(n for n in graph["nodes"] if n["id"] == "route")
    assert [p["name"] for p in route["outputs"]] == ["branch", "math", "chat"]
    edges = {(e["source"], e["sourceHandle"], e["target"]) for e in graph["edges"]}
    assert {("route", "math", "math"), ("route", "chat", "chat")} <= edges
    assert editor.connect("route", "math", "chat", "question")
    assert "inputs: {question: $route.math}" in editor.flow.text.split("  chat:")[1]


def test_messages_handles_are_typed(tmp_path: Path) -> None:
    append = node_ports("chat.append", {}, {}, tmp_path)
    assert {p.name: str(p.type) for p in append.inputs} == {"messages": "messages | null", "content": "str"}
    assert {p.name: str(p.type) for p in append.outputs} == {"messages": "messages"}
    generate = node_ports("llm.generate", {"prompt": "{{ q }} {{ tone | default('') }}"}, {}, tmp_path)
    assert {p.name: (str(p.type), p.required) for p in generate.inputs} == {
        "q": ("any", True),
        "tone": ("any | null", False),
        "messages": ("messages | null", False),
    }


def test_the_inspector_and_the_schema_know_the_new_nodes() -> None:
    switch = {f.key: f for f in config_fields("control.switch")}
    assert switch["cases"].widget == "yaml" and switch["cases"].required and "branch" in switch["cases"].help
    assert switch["default"].optional
    assert config_fields("control.join")[0].choices == ("wiring", "arrival")
    assert config_fields("chat.append")[0].choices == ("system", "user", "assistant")
    assert "collect" in {f.key for f in config_fields("control.loop")}
    assert "optional" in {f.key for f in config_fields("text.template")}
    listed = full_schema()["$defs"]["NodeSpec"]["properties"]["type"]["examples"]
    assert {"control.switch", "control.join", "chat.append"} <= set(listed)
