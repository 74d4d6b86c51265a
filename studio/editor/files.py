"""The flow files of a studio folder: finding them, a free name for a new one, creating one.

The pages that list flows (Home, Run, Editor, History, Experiments) and the "New flow" form share
these; nothing here imports Streamlit."""

from __future__ import annotations

import re
from pathlib import Path

from studio.editor.document import new_flow_text
from studio.editor.layout import sidecar_path
from studio.errors import FlowError
from studio.flow.fmt import dump, round_trip_yaml
from studio.flow.spec import FLOW_NAME

SKIP_DIRS = {"node_modules", "__pycache__"}
"""Folders never searched for flow or data files (besides hidden ones)."""
NEW_NAME = "new-flow"


def flow_files(folder: Path) -> list[Path]:
    """Flow files in `folder` and its direct subfolders (not hidden ones); layout sidecars excluded."""
    candidates = [*folder.glob("*.y*ml"), *folder.glob("*/*.y*ml")]
    found = []
    for path in sorted(candidates):
        hidden = any(part.startswith(".") or part in SKIP_DIRS for part in path.relative_to(folder).parts)
        if hidden or path.name.endswith((".layout.yaml", ".layout.yml")):
            continue
        try:
            head = path.read_text(encoding="utf-8")[:4096]
        except (OSError, UnicodeDecodeError):
            continue
        if any(line.startswith("flowstudio:") for line in head.splitlines()):
            found.append(path)
    return found


def free_name(folder: Path) -> str:
    """`new-flow`, or `new-flow-2`, `new-flow-3`... : the first with no file in `folder`."""
    number, name = 1, NEW_NAME
    while (folder / f"{name}.yaml").exists():
        number += 1
        name = f"{NEW_NAME}-{number}"
    return name


def create_flow(folder: Path, name: str, start: Path | None) -> Path:
    """Write a new flow file: empty, or a copy of `start` under the new name (with its layout).
    FlowError (field `name`) for a name that is not a flow name or whose file exists."""
    if not re.fullmatch(FLOW_NAME, name):
        raise FlowError("a flow name is lowercase letters, digits and dashes", field="name")
    path = folder / f"{name}.yaml"
    if path.exists():
        raise FlowError(f"{path.name} exists already", field="name")
    if start is None:
        path.write_text(new_flow_text(name), encoding="utf-8")
        return path
    document = round_trip_yaml().load(start.read_text(encoding="utf-8"))
    document["name"] = name
    path.write_text(dump(document), encoding="utf-8")
    if sidecar_path(start).exists():
        sidecar_path(path).write_text(sidecar_path(start).read_text(encoding="utf-8"), encoding="utf-8")
    return path
