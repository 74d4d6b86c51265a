"""A Streamlit script that draws `flow_canvas` on a fixed graph and shows every event it got, for the browser test.

It handles events the way the editor page should: events of a new session start from ack 0, events
with `seq` above the ack are new, `add_node` and `move` change the graph (a new version), `connect`
sets a message; then it reruns so the component gets the new ack (and its session) and graph.
`?nodes=200` adds 200 more nodes, to try the canvas at that size by hand.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from studio.app.canvas import flow_canvas

PALETTE = [
    {"type": "llm.generate", "category": "llm", "description": "Generate text with a model"},
    {"type": "text.template", "category": "text", "description": "Fill a Jinja template"},
    {"type": "control.merge", "category": "control", "description": "Take the first input that arrived"},
]


def _port(name: str, type_: str, *, required: bool = False, wired: bool = False) -> dict[str, Any]:
    return {"name": name, "type": type_, "required": required, "wired": wired}


def _node(id_: str, kind: str, type_: str, x: float, y: float, **extra: Any) -> dict[str, Any]:
    return {"id": id_, "kind": kind, "type": type_, "label": id_, "x": x, "y": y, "inputs": [], "outputs": []} | extra


def initial_graph() -> dict[str, Any]:
    text = [{"name": "text", "type": "str"}]
    summarise_in = [_port("article", "str", required=True, wired=True), _port("temperature", "float")]
    headline_in = [_port("summary", "str", required=True)]
    nodes = [
        _node("$inputs", "inputs", "", 0, 60, outputs=[{"name": "topic", "type": "str"}], add_port=True),
        _node("summarise", "node", "llm.generate", 330, 0, status="succeeded", inputs=summarise_in, outputs=text),
        _node("headline", "node", "text.template", 740, 0, inputs=headline_in, outputs=text, add_port=True),
        _node("$outputs", "outputs", "", 1120, 60, inputs=[_port("title", "str")], add_port=True),
    ]
    nodes[2]["errors"] = ["prompt: unknown variable 'x'"]
    nodes[1]["cause"] = True  # as the Traces page marks a failure's likely cause
    edge = {"id": "$inputs.topic->summarise.article", "source": "$inputs", "sourceHandle": "topic"}
    edge |= {"target": "summarise", "targetHandle": "article", "type": "str"}
    return {"nodes": nodes, "edges": [edge], "palette": PALETTE, "selected": None, "message": None, "version": 1}


def big_graph(count: int) -> dict[str, Any]:
    """`count` generate nodes in a grid, each wired to the previous one (for checking it stays smooth)."""
    graph = initial_graph()
    for i in range(count):
        inputs = [_port("article", "str", required=True, wired=i > 0)]
        graph["nodes"].append(_node(f"n{i}", "node", "llm.generate", 1200 + 260 * (i % 20), 160 * (i // 20),
                                    inputs=inputs, outputs=[{"name": "text", "type": "str"}]))  # fmt: skip
        if i:
            edge = {"id": f"n{i - 1}.text->n{i}.article", "source": f"n{i - 1}", "sourceHandle": "text"}
            graph["edges"].append(edge | {"target": f"n{i}", "targetHandle": "article", "type": "str"})
    return graph


def new_events(value: dict[str, Any] | None, state: Any) -> list[dict[str, Any]]:
    """The events not processed yet; a new session (a fresh mount) starts again from ack 0."""
    if not value:
        return []
    if value["session"] != state.session:
        state.session, state.ack = value["session"], 0
    return [event for event in value["events"] if event["seq"] > state.ack]


def apply(event: dict[str, Any], graph: dict[str, Any]) -> None:
    kind = event["kind"]
    if kind == "add_node":
        node_id = f"{event['type']}-{len(graph['nodes']) - 3}"
        graph["nodes"].append(
            _node(node_id, "node", event["type"], event["x"], event["y"], inputs=[_port("in", "any")])
        )
    elif kind == "move":
        for node in graph["nodes"]:
            node.update(event["positions"].get(node["id"], {}))
    elif kind == "connect":
        text = f"connect {event['source']}.{event['sourceHandle']} -> {event['target']}.{event['targetHandle']}"
        graph["message"] = {"level": "info", "text": text}
        return
    elif kind == "select":
        graph["selected"] = event["node"]
        return
    else:
        return
    graph["version"] += 1


def main() -> None:
    st.set_page_config(layout="wide")
    state = st.session_state
    if "graph" not in state:
        count = int(st.query_params.get("nodes", 0))
        state.graph = big_graph(count) if count else initial_graph()
        state.session, state.ack, state.log = None, 0, []
    args = state.graph | {
        "ack": state.ack,
        "ack_session": state.session,
        "can_undo": True,
        "can_redo": False,
        "fit": True,
    }
    fresh = new_events(flow_canvas(args, key="canvas", height=520), state)
    for event in fresh:
        apply(event, state.graph)
        state.log.append(event)
        state.ack = event["seq"]
    if fresh:
        st.rerun()
    st.code(json.dumps(state.log), language="json")


main()
