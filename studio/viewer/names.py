"""Step names: `node`, or a path into sub-flows such as `map[2].summarise` or `loop[1].critique`."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PART = re.compile(r"^(?P<node>[^\[\]]+)(?:\[(?P<label>[^\[\]]*)\])?$")


@dataclass(frozen=True)
class StepName:
    """A parsed step name: the node ids on the path and the iteration (or item) of each.

    A label is an int for map items and loop iterations (`map[2]`), else the text between the
    brackets, or None where the node has none (`call.answer`).
    """

    raw: str
    parts: tuple[tuple[str, int | str | None], ...]

    @property
    def top(self) -> str:
        """The node of the run's own flow that this step belongs to."""
        return self.parts[0][0]

    @property
    def nested(self) -> bool:
        """Whether the step ran inside a sub-flow (a map item, a loop iteration, a called flow)."""
        return len(self.parts) > 1

    @property
    def scope(self) -> str:
        """Where the step ran: `""` for the run's own flow, else the path up to the last dot."""
        return ".".join(_join(part) for part in self.parts[:-1])

    @property
    def leaf(self) -> str:
        """The node id inside its own (sub-)flow."""
        return self.parts[-1][0]


def parse_step_name(name: str) -> StepName:
    """Split `map[2].summarise` into `(("map", 2), ("summarise", None))`; odd names stay whole."""
    parts: list[tuple[str, int | str | None]] = []
    for piece in _split(name):
        match = _PART.match(piece)
        if not match:
            return StepName(name, ((name, None),))
        label = match.group("label")
        parts.append((match.group("node"), int(label) if label is not None and label.isdigit() else label))
    return StepName(name, tuple(parts))


def _split(name: str) -> list[str]:
    """Split on dots outside brackets, so a label may hold a dot (`map[a.b].x`)."""
    pieces, depth, current = [], 0, ""
    for char in name:
        depth += (char == "[") - (char == "]")
        if char == "." and depth == 0:
            pieces.append(current)
            current = ""
        else:
            current += char
    return [*pieces, current]


def _join(part: tuple[str, int | str | None]) -> str:
    node, label = part
    return node if label is None else f"{node}[{label}]"


def top_node(name: str) -> str:
    """The top-level node a step or model call belongs to."""
    return parse_step_name(name).top
