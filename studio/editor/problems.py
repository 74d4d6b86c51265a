"""What is wrong with the flow under edit, placed on the node it concerns where that is known."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.errors import FlowError
from studio.flow.loader import loads
from studio.flow.spec import Flow, parse
from studio.runtime.compiler import compile_flow


@dataclass(frozen=True)
class Problem:
    """One validation error, as `flowstudio validate` would report it."""

    message: str
    node: str | None
    where: str
    """`file:line at field`."""


@dataclass(frozen=True)
class Checked:
    """What validating a text found."""

    data: Any
    """The text as the safe loader read it."""
    flow: Flow | None
    """The flow, when it compiles."""
    problems: list[Problem]


def check(text: str, path: Path) -> Checked:
    """The flow when it compiles; else the first error the schema or compiler finds.

    Raises LoadError when the text is not acceptable YAML at all: there is no graph to edit.
    """
    document = loads(text, file=str(path))
    try:
        flow = parse(document, text, path)
        compile_flow(flow)
    except FlowError as err:
        return Checked(document.data, None, [Problem(err.message, err.node or _node_of(err.field), err.where())])
    return Checked(document.data, flow, [])


def _node_of(field: str | None) -> str | None:
    parts = (field or "").split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "nodes" else None
