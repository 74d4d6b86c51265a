"""Which importer reads a path: a Prompt flow folder (or its `flow.dag.yaml`), else a Dify DSL file."""

from __future__ import annotations

from pathlib import Path

from studio.errors import FlowError
from studio.importers.build import Imported
from studio.importers.dify import import_dify
from studio.importers.promptflow import import_promptflow


def import_path(source: Path, *, allow_placeholders: bool = False) -> Imported:
    """Import `source` with the importer its shape names (raises FlowError when neither fits)."""
    if source.is_dir() or source.name == "flow.dag.yaml":
        return import_promptflow(source, allow_placeholders=allow_placeholders)
    if source.suffix in (".yml", ".yaml") and source.is_file():
        return import_dify(source, allow_placeholders=allow_placeholders)
    raise FlowError("not a Prompt flow folder (with flow.dag.yaml) nor a Dify DSL file (.yml)", file=str(source))


def free_path(folder: Path, name: str) -> Path:
    """`folder/NAME.yaml`, or `NAME-2.yaml`, ... when taken (a sub-flow name counts as taken too)."""
    path, n = folder / f"{name}.yaml", 2
    while path.exists():
        path, n = folder / f"{name}-{n}.yaml", n + 1
    return path
