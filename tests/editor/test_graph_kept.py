"""A click on a node reruns the Editor page: the canvas's 200 cards are not built again unless the
flow or its layout changed (issue 38, Measure: the Inspector opens in under 0.5 s)."""

from __future__ import annotations

from pathlib import Path

from studio.editor.editor import Editor
from tests.app.editor_browser import chain_flow


def test_the_canvas_graph_is_kept_until_the_flow_or_the_layout_changes(tmp_path: Path) -> None:
    path = tmp_path / "chain.yaml"
    path.write_text(chain_flow(30), encoding="utf-8")
    editor = Editor(path)
    first = editor.graph()
    editor.apply({"kind": "select", "node": "c3", "seq": 1})
    again = editor.graph()
    assert again["nodes"] is first["nodes"] and again["edges"] is first["edges"] and again["selected"] == "c3"

    editor.move({"c3": (1.0, 2.0)})
    moved = editor.graph()
    assert moved["nodes"] is not first["nodes"]
    assert next(n for n in moved["nodes"] if n["id"] == "c3")["x"] == 1.0

    editor.edit_field("c3", "description", "third")
    assert next(n for n in editor.graph()["nodes"] if n["id"] == "c3")["description"] == "third"
    assert editor.graph({"c3": "running"})["nodes"] is not editor.graph()["nodes"]  # a run's statuses: drawn fresh
