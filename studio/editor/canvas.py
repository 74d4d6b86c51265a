"""The graph the canvas component draws: nodes with typed ports, edges, the palette."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from studio.editor.document import EditableFlow, edge_id, edges, starter
from studio.editor.layout import INPUTS, OUTPUTS, Layout
from studio.editor.ports import NodePorts, Port, node_ports
from studio.editor.problems import Problem
from studio.flow import templates
from studio.runtime import registry

GUARD_HANDLE = "$when"
"""The hidden target handle on every node that guard and `after` links enter."""


def _port(port: Port, wired: set[str]) -> dict[str, Any]:
    return {"name": port.name, "type": str(port.type), "required": port.required, "wired": port.name in wired}


def _category(node_type: str) -> str:
    return node_type.split(".", 1)[0]


@cache
def palette() -> list[dict[str, Any]]:
    """Every registered node type, with the first line of its docstring and the card a node of that
    type gets when it is added (the same for every rerun)."""
    found = []
    for key in registry.keys():  # noqa: SIM118 - a module function, not a dict
        cls = registry.get(key)
        doc = (cls.__doc__ or "").strip().splitlines() if cls else []
        found.append(
            {"type": key, "category": _category(key), "description": doc[0] if doc else "", "card": _starter_card(key)}
        )
    return found


def _starter_card(node_type: str) -> dict[str, Any]:
    """The card of a node just added from the palette, without its id and place: the canvas draws it
    at once, before Python's graph with the node comes back. A starter config names no file, so the
    folder it is checked in does not matter."""
    config = starter(node_type)
    ports = node_ports(node_type, config, {}, Path.cwd())
    return _card("", {"type": node_type, "config": config}, ports, set())


def _card(node_id: str, spec: Mapping[str, Any], ports: NodePorts, wired: set[str]) -> dict[str, Any]:
    """What the canvas draws of one node, from its spec and ports (its place, status and notes apart)."""
    return {
        "id": node_id,
        "kind": "node",
        "type": str(spec.get("type", "")),
        "label": node_id,
        "inputs": [_port(p, wired) for p in ports.inputs],
        "outputs": [{"name": p.name, "type": str(p.type)} for p in ports.outputs],
        "errors": ports.errors,
        "add_port": ports.templated,
        **facts(spec),
    }


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
    flow: EditableFlow,
    layout: Layout,
    problems: list[Problem],
    status: Mapping[str, str],
    notes: Mapping[str, Mapping[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """The special inputs/outputs nodes, then every node of the flow in file order.

    `notes`: what a run from the editor says per node: `preview` (streamed or produced text),
    `run_error` (why its step failed)."""
    notes = notes or {}
    wired = {(target, port) for _, _, target, port in edges(flow)}
    found = _special_nodes(flow, layout, wired)
    for node_id, ports in flow.ports().items():
        errors = ports.errors + [
            p.message for p in problems if p.node == node_id and not any(e in p.message for e in ports.errors)
        ]
        card = _card(node_id, flow.node(node_id), ports, {port for target, port in wired if target == node_id})
        found.append(
            {**card, **_at(layout, node_id), "status": status.get(node_id), "errors": errors, **notes.get(node_id, {})}
        )
    return found


CHAR_PX = 9.5
"""About how wide one character of a card's 16px text is, in canvas pixels."""


def card_size(node_id: str, spec: Mapping[str, Any], ports: NodePorts | None) -> tuple[float, float]:
    """About how big the canvas draws a node's card (width, height), for laying the flow out."""
    if node_id in (INPUTS, OUTPUTS) or ports is None:
        return (230.0, 120.0)
    said = facts(spec)
    rows_in = [len(p.name) + len(str(p.type)) + 3 for p in ports.inputs] + ([14] if ports.templated else [])
    rows_out = [len(p.name) + len(str(p.type)) + 3 for p in ports.outputs]
    badges = len(said["when"] or "") + 5 + len(said["model"] or "") + (4 if said["when"] else 0)
    chars = max(
        len(node_id) + len(str(spec.get("type", ""))) + 4, max(rows_in, default=0) + max(rows_out, default=0) + 4
    )
    prose = len(said["description"]) * CHAR_PX * 0.85 + 30  # a description wraps only at the card's widest
    width = min(380.0, max(220.0, max(chars, badges) * CHAR_PX + 30, prose))
    lines = -(-len(said["description"]) * CHAR_PX // (width - 24)) if said["description"] else 0
    rows = max(len(rows_in), len(rows_out), 1)
    height = (
        44 + (30 if said["when"] or said["model"] else 0) + 22 * lines + (28 if said["subflow"] else 0) + 28 * rows + 14
    )
    return (round(width), round(height))


def card_sizes(flow: EditableFlow) -> dict[str, tuple[float, float]]:
    """Every card's size (the flow's inputs and outputs included), for `layout.auto_layout`."""
    ports = flow.ports()
    sizes = {node_id: card_size(node_id, {}, None) for node_id in (INPUTS, OUTPUTS)}
    for node_id, spec in flow.nodes().items():
        sizes[str(node_id)] = card_size(str(node_id), spec if isinstance(spec, dict) else {}, ports.get(str(node_id)))
    return sizes


def facts(spec: Mapping[str, Any]) -> dict[str, Any]:
    """What the YAML says about a node beside its ports: description, model alias, guard, sub-flow file."""
    cls = registry.get(str(spec.get("type", "")))
    config = spec.get("config") if isinstance(spec.get("config"), dict) else {}
    subflow = config.get("flow") if isinstance(config, dict) else None
    when = spec.get("when")
    return {
        "description": str(spec.get("description") or ""),
        "model": str(spec.get("model") or "default") if cls is not None and cls.uses_model else None,
        "when": str(when) if when not in (None, "") else None,
        "subflow": str(subflow) if isinstance(subflow, str) and subflow.strip() else None,
    }


def _guard_sources(when: str) -> list[tuple[str, str | None]]:
    """(node id, port it reads or None) for each node a `when` expression names (none when it does not parse)."""
    try:
        names = templates.expression_names(when)
    except Exception:  # a half-written guard draws no link; validation reports it
        return []
    found = []
    for name in sorted(names):
        port = re.search(rf"\b{re.escape(name)}\s*\.\s*(\w+)", when)
        found.append((name, port.group(1) if port else None))
    return found


def _link(source: str, port: str, target: str, kind: str) -> dict[str, Any]:
    return {
        "id": f"{kind}:{source}.{port}~{target}",
        "source": source,
        "sourceHandle": port,
        "target": target,
        "targetHandle": GUARD_HANDLE,
        "type": "any",
        "kind": kind,
    }


def ordering_pairs(flow: EditableFlow) -> list[tuple[str, str]]:
    """(node, guarded or later node) for each node a `when` reads and each `after` entry: for laying out."""
    found = []
    for node_id, spec in flow.nodes().items():
        if not isinstance(spec, dict):
            continue
        when = spec.get("when")
        found += [(source, str(node_id)) for source, _ in (_guard_sources(str(when)) if when else [])]
        after = spec.get("after")
        found += [(str(source), str(node_id)) for source in (after if isinstance(after, list) else [])]
    return [(a, b) for a, b in found if a in flow.nodes()]


def guard_edges(flow: EditableFlow) -> list[dict[str, Any]]:
    """A `when` link from each node a guard reads to the guarded node, and an `after` link per ordering dependency."""
    ports = flow.ports()
    found = []
    for node_id, spec in flow.nodes().items():
        if not isinstance(spec, dict):
            continue
        when = spec.get("when")
        for source, port in _guard_sources(str(when)) if when else []:
            outputs = [p.name for p in ports[source].outputs] if source in ports else []
            if outputs:
                found.append(_link(source, port if port in outputs else outputs[0], str(node_id), "guard"))
        for source in spec.get("after") or [] if isinstance(spec.get("after"), list) else []:
            outputs = [p.name for p in ports[str(source)].outputs] if str(source) in ports else []
            if outputs:
                found.append(_link(str(source), outputs[0], str(node_id), "after"))
    return found


def canvas_edges(flow: EditableFlow) -> list[dict[str, Any]]:
    """Data wires (`conditional` when they enter a guarded node), then guard and `after` links."""
    ports = flow.ports()
    guarded = {str(n) for n, spec in flow.nodes().items() if isinstance(spec, dict) and spec.get("when")}
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
                "kind": "data",
                "conditional": target in guarded,
            }
        )
    return found + guard_edges(flow)
