"""The Traces page's graph: the editor's canvas, read-only, its nodes coloured by this run's statuses.

The drawing (cards with typed ports, wires, positions) comes from the run's stored flow text, as
the editor would draw it, and is memoised per flow text; only the statuses and the selection
change from run to run. A click on a node comes back as the canvas's `select` event.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.editor.canvas import canvas_edges, canvas_nodes, card_sizes, ordering_pairs
from studio.editor.document import EditableFlow, edges
from studio.editor.layout import INPUTS, OUTPUTS, Layout, auto_layout, read_sidecar
from studio.flow.loader import loads
from studio.viewer import node_summaries
from studio.viewer.nodes import Shown
from studio.viewer.trace import Trace

CANVAS_STATUS: dict[Shown, str | None] = {
    "succeeded": "succeeded",
    "failed": "failed",
    "skipped": "skipped",
    "cached": "cached",
    "reused": "reused",
    "waiting": "waiting",
    "running": "running",
    "not run": None,
}
"""The viewer's status → the canvas's (`types.ts` Status); a node that did not run has none."""
ERROR_CHARS = 160
"""How much of a failed step's error its card shows (the Node tab has all of it)."""


@dataclass(frozen=True)
class Drawing:
    """A flow as the canvas draws it, before any run's statuses."""

    nodes: tuple[dict[str, Any], ...]
    edges: tuple[dict[str, Any], ...]


@dataclass
class Acked:
    """The canvas events of one mount (`session`) the page has handled, up to `seq`."""

    session: str | None = None
    seq: int = 0


def _layout(flow: EditableFlow, path: Path | None) -> Layout:
    """The editor's saved positions when they cover every node, else laid out as the editor would."""
    ids = [INPUTS, *(str(n) for n in flow.nodes()), OUTPUTS]
    try:
        saved = read_sidecar(path) if path is not None else {}
    except Exception:  # a broken sidecar only loses the saved positions
        saved = {}
    if saved and all(node_id in saved for node_id in ids):
        return saved
    graph = [(INPUTS, OUTPUTS), *((a, b) for a, _, b, _ in edges(flow)), *ordering_pairs(flow)]
    return auto_layout(ids, graph, card_sizes(flow))


@functools.lru_cache(maxsize=16)
def drawing(flow_text: str, flow_path: str | None) -> Drawing | None:
    """The canvas's nodes and edges for a stored flow text; None when it cannot be drawn (then the
    page falls back to the graphviz picture)."""
    path = Path(flow_path) if flow_path else None
    try:
        data = loads(flow_text).data
        flow = EditableFlow(flow_text, path or Path("flow.yaml"), data=data)
        nodes = canvas_nodes(flow, _layout(flow, path), [], {})
        wires = canvas_edges(flow)
    except Exception:  # a flow the editor cannot read (a node type gone, a broken file): the picture instead
        return None
    shown = [{**node, "errors": [], "add_port": False} for node in nodes]
    return Drawing(tuple(shown), tuple(wires))


def _run_error(error: str | None) -> dict[str, str]:
    if not error:
        return {}
    first = error.strip().splitlines()[0] if error.strip() else error
    return {"run_error": first[:ERROR_CHARS] + ("…" if len(first) > ERROR_CHARS else "")}


def _specials(trace: Trace) -> dict[str, str | None]:
    """The flow's inputs were given once the run started; its outputs exist when it succeeded."""
    ended = {"succeeded": "succeeded", "failed": "failed", "waiting": "waiting", "running": "running"}
    return {INPUTS: "succeeded", OUTPUTS: ended.get(trace.run.status)}


def trace_graph(
    drawn: Drawing, trace: Trace, *, selected: str | None, acked: Acked, cause: str | None = None
) -> dict[str, Any]:
    """The component's `graph` argument for this run: statuses, failing steps' errors, the selection,
    and the node the failure box names as the likely cause (ringed)."""
    summaries = {s.node: s for s in node_summaries(trace)}
    specials = _specials(trace)
    nodes = []
    for node in drawn.nodes:
        summary = summaries.get(node["id"])
        status = CANVAS_STATUS[summary.status] if summary else specials.get(node["id"])
        notes = _run_error(summary.error) if summary and summary.status == "failed" else {}
        marked = {"cause": True} if node["id"] == cause else {}
        nodes.append({**node, "status": status, **notes, **marked})
    return {
        "nodes": nodes,
        "edges": list(drawn.edges),
        "palette": [],
        "selected": selected,
        "message": None,
        "version": 1,
        "ack": acked.seq,
        "ack_session": acked.session,
        "can_undo": False,
        "can_redo": False,
        "fit": True,
    }


def clicked(value: Mapping[str, Any] | None, acked: Acked) -> str | None:
    """The node of the newest `select` event not handled yet (None when there is none); marks
    every event of `value` as handled in `acked`."""
    if not value:
        return None
    if value.get("session") != acked.session:
        acked.session, acked.seq = value.get("session"), 0
    node = None
    for event in value.get("events") or []:
        seq = int(event.get("seq", 0))
        if seq <= acked.seq:
            continue
        acked.seq = seq
        if event.get("kind") == "select" and event.get("node"):
            node = str(event["node"])
    return node
