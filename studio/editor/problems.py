"""What is wrong with the flow under edit, placed on the node it concerns where that is known."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from studio.compiler import compile_flow
from studio.errors import FlowError, LoadError
from studio.spec import Flow, load_flow_text


@dataclass(frozen=True)
class Problem:
    """One validation error, as `flowstudio validate` would report it."""

    message: str
    node: str | None
    where: str
    """`file:line at field`."""


def check(text: str, path: Path) -> tuple[Flow | None, list[Problem]]:
    """The flow when it compiles; else the first error the schema or compiler finds.

    Raises LoadError when the text is not acceptable YAML at all: there is no graph to edit.
    """
    try:
        flow = load_flow_text(text, file=str(path), path=path)
        compile_flow(flow)
    except LoadError:
        raise
    except FlowError as err:
        return None, [Problem(err.message, err.node or _node_of(err.field), err.where())]
    return flow, []


def _node_of(field: str | None) -> str | None:
    parts = (field or "").split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "nodes" else None
