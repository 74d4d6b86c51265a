"""The semantic diff names the node and field that changed, and shows a prompt as a text diff."""

from __future__ import annotations

from pathlib import Path

from studio.flow.spec import load_flow
from studio.versions.diff import diff_flows, format_diff, is_empty
from tests.versions.project import MAIN, edit, make


def test_a_changed_prompt_is_named_by_node_and_field_with_a_text_diff(tmp_path: Path) -> None:
    before = make(tmp_path)
    after = tmp_path / "after.yaml"
    after.write_text(MAIN.replace("Say {{ word }} politely.", "Say {{ word }} warmly."))
    diff = diff_flows(load_flow(before), load_flow(after))
    [change] = diff["nodes"]["changed"]
    assert (change["node"], change["field"]) == ("say", "config.prompt")
    assert "-Say {{ word }} politely." in change["text_diff"] and "+Say {{ word }} warmly." in change["text_diff"]
    assert "~ node say: config.prompt" in format_diff(diff)
    assert is_empty(diff_flows(load_flow(before), load_flow(before)))


def test_added_removed_renamed_nodes_wires_models_inputs_and_outputs(tmp_path: Path) -> None:
    before = make(tmp_path)
    after = tmp_path / "after.yaml"
    after.write_text(MAIN)
    edit(after, "  call:\n", "  shout:\n")  # a rename: same type and config, new id
    edit(after, "$call.loud", "$shout.loud")
    edit(after, "  word: {type: str}\n", "  word: {type: str}\n  tone: {type: str, default: calm}\n")
    edit(after, "model: scripted/scripts/model.yaml}", "model: scripted/scripts/model.yaml, temperature: 0.5}")
    edit(after, "  said: $say.text\n", "")
    diff = diff_flows(load_flow(before), load_flow(after))
    assert diff["nodes"]["renamed"] == [{"from": "call", "to": "shout"}]
    assert diff["nodes"]["added"] == [] and diff["nodes"]["removed"] == []
    assert "$call.loud -> outputs.loud" in diff["wires"]["removed"]
    assert "$shout.loud -> outputs.loud" in diff["wires"]["added"]
    assert diff["inputs"]["added"] == ["tone"] and diff["outputs"]["removed"] == ["said"]
    assert diff["models"]["changed"] == [{"name": "default", "field": "temperature", "before": None, "after": 0.5}]
    lines = format_diff(diff)
    assert "~ node call renamed to shout" in lines and "- output said" in lines
