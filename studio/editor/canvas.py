"""The graph the canvas component draws: nodes with typed ports, edges, the palette."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from studio.editor.document import EditableFlow, edge_id, edges
from studio.editor.layout import INPUTS, OUTPUTS, Layout
from studio.editor.ports import Port
from studio.editor.problems import Problem
from studio.runtime import registry


def _port(port: Port, wired: set[str]) -> dict[str, Any]:
    return {"name": port.name, "type": str(port.type), "required": port.required, "wired": port.name in wired}


def _category(node_type: str) -> str:
    return node_type.split(".", 1)[0]


@cache
def palette() -> list[dict[str, str]]:
    """Every registered node type, with the first line of its docstring (the same for every rerun)."""
    found = []
    for key in registry.keys():  # noqa: SIM118 - a module function, not a dict
        cls = registry.get(key)
        doc = (cls.__doc__ or "").strip().splitlines() if cls else []
        found.append({"type": key, "category": _category(key), "description": doc[0] if doc else ""})
    return found


def _special_nodes(flow: EditableFlow, layout: Layout, wired: set[tuple[str, str]]) -> list[dict[str, Any]]:
    inputs = [{"name": n, "type": str(t)} for n, t in flow.input_types().items()]
    outputs = [
        {"name": str(n), "type": "any", "required": False, "wired": (OUTPUTS, str(n)) in wired}
        for n in flow.section("outputs")
    ]
    common: dict[str, Any] = {"type": "", "status": None, "errors": [], "add_port": True}
    return [
        {
            "id": INPUTS,
            "kind": "inputs",
            "label": "Flow inputs",
            "inputs": [],
            "outputs": inputs,
            **_at(layout, INPUTS),
            **common,
        },
        {
            "id": OUTPUTS,
            "kind": "outputs",
            "label": "Flow outputs",
            "inputs": outputs,
            "outputs": [],
            **_at(layout, OUTPUTS),
            **common,
        },
    ]


def _at(layout: Layout, node_id: str) -> dict[str, float]:
    x, y = layout.get(node_id, (0.0, 0.0))
    return {"x": x, "y": y}


def canvas_nodes(
    flow: EditableFlow, layout: Layout, problems: list[Problem], status: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The special inputs/outputs nodes, then every node of the flow in file order."""
    wired = {(target, port) for _, _, target, port in edges(flow)}
    found = _special_nodes(flow, layout, wired)
    for node_id, ports in flow.ports().items():
        errors = ports.errors + [p.message for p in problems if p.node == node_id]
        node_type = str(flow.node(node_id).get("type", ""))
        inputs = [_port(p, {port for target, port in wired if target == node_id}) for p in ports.inputs]
        found.append(
            {
                "id": node_id,
                "kind": "node",
                "type": node_type,
                "label": node_id,
                **_at(layout, node_id),
                "inputs": inputs,
                "outputs": [{"name": p.name, "type": str(p.type)} for p in ports.outputs],
                "status": status.get(node_id),
                "errors": errors,
                "add_port": ports.templated,
            }
        )
    return found


def canvas_edges(flow: EditableFlow) -> list[dict[str, str]]:
    ports = flow.ports()
    input_types = flow.input_types()
    found = []
    for source, source_port, target, target_port in edges(flow):
        if source == INPUTS:
            kind = str(input_types.get(source_port, "any"))
        else:
            port = ports[source].output(source_port) if source in ports else None
            kind = str(port.type) if port else "any"
        found.append(
            {
                "id": edge_id(source, source_port, target, target_port),
                "source": source,
                "sourceHandle": source_port,
                "target": target,
                "targetHandle": target_port,
                "type": kind,
            }
        )
    return found
