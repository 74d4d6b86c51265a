"""A studio folder's flow files: found (hidden folders, sidecars and non-flows left out), a free
name for a new one, created empty or as a copy with its layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.editor.files import create_flow, flow_files, free_name
from studio.editor.layout import sidecar_path
from studio.errors import FlowError
from studio.flow.spec import load_flow

FLOW = "flowstudio: 1\nname: {name}\nnodes:\n  a: {{type: text.template, config: {{template: hi}}}}\n"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_flow_files_are_the_folders_flows_and_its_subfolders(tmp_path: Path) -> None:
    top = _write(tmp_path / "a.yaml", FLOW.format(name="a"))
    part = _write(tmp_path / "parts" / "b.yml", FLOW.format(name="b"))
    _write(tmp_path / "a.layout.yaml", "flowstudio: 1\n")  # a sidecar, never a flow
    _write(tmp_path / "data.yaml", "rows: []\n")  # YAML, but no flow
    _write(tmp_path / ".hidden" / "c.yaml", FLOW.format(name="c"))
    _write(tmp_path / "node_modules" / "d.yaml", FLOW.format(name="d"))
    _write(tmp_path / "deep" / "er" / "e.yaml", FLOW.format(name="e"))  # two levels down
    assert flow_files(tmp_path) == [top, part]


def test_a_free_name_skips_the_names_taken(tmp_path: Path) -> None:
    assert free_name(tmp_path) == "new-flow"
    _write(tmp_path / "new-flow.yaml", "")
    _write(tmp_path / "new-flow-2.yaml", "")
    assert free_name(tmp_path) == "new-flow-3"


def test_a_new_flow_is_empty_or_a_copy_with_its_layout(tmp_path: Path) -> None:
    empty = create_flow(tmp_path, "blank", None)
    assert load_flow(empty).spec.name == "blank" and not load_flow(empty).spec.nodes
    start = _write(tmp_path / "start.yaml", "# kept\n" + FLOW.format(name="start"))
    _write(sidecar_path(start), "a: [1, 2]\n")
    copy = create_flow(tmp_path, "copy", start)
    assert copy.read_text(encoding="utf-8").startswith("# kept\n") and load_flow(copy).spec.name == "copy"
    assert sidecar_path(copy).read_text(encoding="utf-8") == "a: [1, 2]\n"


@pytest.mark.parametrize(("name", "said"), [("Bad Name", "lowercase"), ("blank", "exists already")])
def test_a_bad_or_taken_name_is_refused(tmp_path: Path, name: str, said: str) -> None:
    create_flow(tmp_path, "blank", None)
    with pytest.raises(FlowError, match=said) as err:
        create_flow(tmp_path, name, None)
    assert err.value.field == "name"
