"""An edit of one node writes only that node's block again: the text is exactly what dumping
the whole document gives, on the examples, the test flows and a 200-node flow."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from studio.editor.document import EditableFlow, splice_node
from studio.flow.fmt import dump
from tests.app.editor_browser import big_flow
from tests.conftest import FIXTURES, FLOWS

FILES = sorted([*FLOWS.glob("*.yaml"), *FIXTURES.glob("*.yaml")], key=lambda p: (p.parent.name, p.name))


def _edits(flow: EditableFlow) -> None:
    """Add, connect, configure and describe nodes, checking the text after each edit."""
    first = next(n for n, ports in flow.ports().items() if ports.outputs)
    added = flow.add_node("text.template")
    _same_as_whole_dump(flow)
    assert flow.connect(first, flow.ports()[first].outputs[0].name, added, "text") is None
    _same_as_whole_dump(flow)
    flow.set_config(added, {"template": "Edited {{ text }}"})
    _same_as_whole_dump(flow)
    flow.set_field(first, "description", "Described here")
    _same_as_whole_dump(flow)
    flow.set_field(first, "description", None)
    _same_as_whole_dump(flow)


def _same_as_whole_dump(flow: EditableFlow) -> None:
    whole = dump(flow.document)
    if flow.canonical:
        assert flow.text == whole
    assert flow._dumped == whole  # what the next edit carries over from


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_editing_one_node_gives_the_text_a_whole_dump_gives(path: Path, tmp_path: Path) -> None:
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    flow = EditableFlow(copy.read_text(encoding="utf-8"), copy)
    if not flow.nodes() or not any(p.outputs for p in flow.ports().values()):
        pytest.skip("no node with an output to wire from")
    _edits(flow)


def test_on_a_big_flow_only_the_edited_block_is_written_again(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    text = big_flow(200)
    path.write_text(text, encoding="utf-8")
    flow = EditableFlow(text, path)
    assert flow.document is not None and flow.canonical
    flow.document["nodes"]["n7"]["config"]["template"] = "Changed {{ text }}"
    spliced = splice_node(text, flow.document, "n7")  # the fast path applies here
    assert spliced == dump(flow.document) and spliced != text
    _edits(EditableFlow(text, path))


def test_a_block_with_a_comment_is_dumped_whole(tmp_path: Path) -> None:
    text = big_flow(3).replace("  n1:\n", "  n1:  # kept\n")
    flow = EditableFlow(text, tmp_path / "c.yaml")
    flow.document["nodes"]["n1"]["config"]["template"] = "Changed"
    assert splice_node(dump(flow.document), flow.document, "n1") is None
    flow.set_config("n1", {"template": "Again"})
    assert "# kept" in flow.text and "Again" in flow.text
