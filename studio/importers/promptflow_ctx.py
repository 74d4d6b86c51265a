"""A Prompt flow folder being converted: the source, the builder, node ids, `${...}` read as wires."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from studio.flow.loader import Document
from studio.importers.build import FlowBuilder, jmes, literal
from studio.importers.promptflow_checks import parse_ref
from studio.importers.report import ImportReport, NodeReport
from studio.importers.sources import read_text

PORTS = {"llm": "text", "prompt": "text", "python": "result"}
"""Prompt flow node kinds → the output port their value is on."""


class Ctx:
    """One import in progress: the source, the builder, ids by source name."""

    def __init__(self, folder: Path, doc: Document, builder: FlowBuilder, report: ImportReport) -> None:
        self.folder, self.doc, self.b, self.report = folder, doc, builder, report
        self.ids: dict[str, str] = {}
        self.kinds: dict[str, str] = {}
        self.skippable: set[str] = set()

    def wire(self, value: Any) -> Any:
        """A source value as a flow value: `${...}` references become wires."""
        if not (found := parse_ref(value)):
            return literal(value)
        head, rest = found
        if head == "inputs":
            name, _, path = rest.partition(".")
            return self.b.field(f"$inputs.{name}", jmes(path.split(".")), "inputs") if path else f"$inputs.{name}"
        node_id = self.ids[head]
        port = {**PORTS, "retrieve": "results"}.get(self.kinds[head], "result")
        path = jmes(rest.split(".")[1:])
        return self.b.field(f"${node_id}.{port}", path, node_id) if path else f"${node_id}.{port}"

    def source_text(self, name: str, entry: NodeReport) -> str:
        """The file a node names: in the flow folder, else one of the flow's `additional_includes`
        (files or folders Prompt flow copies into the flow's root, by their last name), which must stay
        inside the folder holding the flow folder."""
        try:
            return read_text(self.folder, name)
        except ValueError:
            includes = self.doc.data.get("additional_includes")
            for include in includes if isinstance(includes, list) else []:
                if isinstance(include, str) and Path(name).parts[:1] == (Path(include).name,):
                    relative = (Path(include).parent / name).as_posix()
                    text = read_text(self.folder.parent, f"{self.folder.name}/{relative}")
                    entry.notes.append(f"{name} read from additional_includes ({include})")
                    return text
            raise
