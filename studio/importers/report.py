"""What an import did, node by node: converted, approximated or not converted, with the source line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Status = Literal["converted", "approximated", "not converted"]


@dataclass
class NodeReport:
    """One source node and what became of it."""

    source: str
    """The node's name (or title) in the source file."""
    kind: str
    """The node's type in the source file (`llm`, `python`, `if-else`, ...)."""
    line: int | None
    """Where the node starts in the source file."""
    status: Status = "converted"
    """Whether it maps natively, approximately, or not at all."""
    notes: list[str] = field(default_factory=list)
    """What to check, or why it could not be converted."""

    def approximate(self, note: str) -> None:
        """Record a difference from the source's behaviour (a node not converted stays so)."""
        if self.status == "converted":
            self.status = "approximated"
        self.notes.append(note)

    def refuse(self, note: str) -> None:
        """Record that the node cannot be converted, and why."""
        self.status = "not converted"
        self.notes.append(note)


@dataclass
class ImportReport:
    """Every source node's outcome, plus notes about the flow as a whole."""

    file: str
    """The source file."""
    nodes: list[NodeReport] = field(default_factory=list)
    """One entry per source node, in source order."""
    notes: list[str] = field(default_factory=list)
    """Flow-wide notes: model aliases to map, inputs renamed, data not kept."""

    def count(self, status: Status) -> int:
        """How many source nodes ended with `status`."""
        return sum(1 for n in self.nodes if n.status == status)

    @property
    def complete(self) -> bool:
        """Whether every node was converted (natively or approximately)."""
        return self.count("not converted") == 0

    def lines(self) -> list[str]:
        """The report as text: one line per node with a note, then the summary."""
        out = []
        for node in self.nodes:
            where = f"{self.file}:{node.line}" if node.line else self.file
            for note in node.notes or ([] if node.status == "converted" else [""]):
                out.append(f"{where}: {node.source} ({node.kind}) {node.status}: {note}".rstrip(": "))
        out += [f"note: {note}" for note in self.notes]
        out.append(self.summary())
        return out

    def summary(self) -> str:
        """`5 nodes: 3 converted, 1 approximated, 1 not converted`."""
        total = len(self.nodes)
        parts = ", ".join(f"{self.count(s)} {s}" for s in ("converted", "approximated", "not converted"))
        return f"{total} node{'s' if total != 1 else ''}: {parts}"
