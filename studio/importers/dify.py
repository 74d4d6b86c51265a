"""Dify DSL (workflow and advanced-chat apps) → a flow file. See docs/importing.md for the mapping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from studio.errors import FlowError
from studio.flow.loader import Document
from studio.importers.build import FlowBuilder, Imported
from studio.importers.dify_ctx import Ctx
from studio.importers.dify_nodes import HANDLERS
from studio.importers.report import ImportReport, NodeReport
from studio.importers.sources import load_yaml
from studio.runtime.registry import with_role

SPREAD = (1.4, 1.6)
"""Dify's cards are smaller than the canvas' cards: positions are spread by this much (x, y)."""

NOTE = "custom-note"
"""Canvas type of Dify's sticky notes: text on the canvas, not a node of the graph."""


def import_dify(source: Path, *, allow_placeholders: bool = False) -> Imported:
    """Import a Dify DSL file (workflow or advanced-chat). Raises FlowError for an invalid source;
    nodes that cannot be converted are in the report (placeholders only with `allow_placeholders`)."""
    doc = load_yaml(source)
    data = doc.data
    app = data.get("app") if isinstance(data, dict) else None
    workflow = data.get("workflow") if isinstance(data, dict) else None
    graph = workflow.get("graph") if isinstance(workflow, dict) else None
    graph = graph if isinstance(graph, dict) else {}
    if (
        not isinstance(app, dict)
        or app.get("mode") not in ("workflow", "advanced-chat")
        or not isinstance(graph.get("nodes"), list)
    ):
        raise FlowError(
            "not a Dify workflow or advanced-chat app (app.mode and workflow.graph.nodes)", file=doc.file, line=1
        )
    nodes = [
        n
        for n in graph["nodes"]
        if isinstance(n, dict) and "id" in n and isinstance(n.get("data"), dict) and n.get("type") != NOTE
    ]
    given = graph.get("edges")
    raw_edges: list[Any] = given if isinstance(given, list) else []
    edges = [e for e in raw_edges if isinstance(e, dict)]
    lines = {
        str(n["id"]): doc.line_of(("workflow", "graph", "nodes", i))
        for i, n in enumerate(graph["nodes"])
        if isinstance(n, dict) and "id" in n
    }
    _check_graph(doc, nodes, raw_edges)
    report = ImportReport(doc.file)
    builder = FlowBuilder(str(app.get("name") or source.stem), str(app.get("description") or ""))
    if app["mode"] == "advanced-chat":
        report.notes.append("advanced-chat: the user's message is the input `query`; conversation memory is not kept")
    top = [n for n in nodes if not n.get("parentId")]
    _convert_graph(Ctx(builder, report, nodes, lines), top, edges, nodes, source, allow_placeholders)
    header = "\n".join([f"Imported from Dify ({source.name}) by `flowstudio import dify`.", *builder.origins])
    return builder.build(report, header)


def _check_graph(doc: Document, nodes: list[dict[str, Any]], edges: list[Any]) -> None:
    """Refuse what Dify would not load: two nodes with one id, an edge from or to no node."""
    ids: set[str] = set()
    for i, node in enumerate(doc.data["workflow"]["graph"]["nodes"]):
        if isinstance(node, dict) and str(node.get("id")) in ids:
            raise FlowError(
                f"two nodes with id {node.get('id')!r}",
                file=doc.file,
                line=doc.line_of(("workflow", "graph", "nodes", i)),
            )
        ids.add(str(node.get("id")) if isinstance(node, dict) else "")
    known = {str(n["id"]) for n in nodes}
    for i, edge in enumerate(edges):
        for end in ("source", "target"):
            if not isinstance(edge, dict) or str(edge.get(end)) not in known:
                where = doc.line_of(("workflow", "graph", "edges", i))
                raise FlowError(f"an edge's {end} is not a node", file=doc.file, line=where)


def _convert_graph(
    ctx: Ctx,
    nodes: list[dict[str, Any]],
    edges: list[dict[str, Any]],
    every: list[dict[str, Any]],
    source: Path,
    placeholders: bool,
) -> None:
    inside = {str(n["id"]) for n in nodes}
    edges = [e for e in edges if str(e.get("source")) in inside and str(e.get("target")) in inside]
    for node in nodes:
        data = node["data"]
        if data.get("type") == "start":
            ctx.start = str(node["id"])
        elif data.get("type") not in ("end", "answer", "iteration-start"):
            ctx.ids[str(node["id"])] = ctx.b.new_id(
                str(data.get("title") or ""), str(data.get("type", "node")).replace("-", "_")
            )
    stand_ins: list[str] = []
    for node in _ordered(nodes, edges):
        data, dify_id = node["data"], str(node["id"])
        entry = NodeReport(str(data.get("title") or dify_id), str(data.get("type")), ctx.lines.get(dify_id))
        if data.get("type") != "iteration-start":
            ctx.report.nodes.append(entry)
        ctx.current = dify_id
        _convert(ctx, node, entry, every, edges, source)
        if entry.status == "not converted" and placeholders and dify_id in ctx.ids:
            ctx.b.placeholder(ctx.ids[dify_id], f"{entry.source} ({entry.kind})", entry.notes[-1])
            stand_ins.append(ctx.ids[dify_id])
        position = node.get("position") or {}
        target = ctx.ids.get(dify_id) or {"start": "$inputs", "end": "$outputs", "answer": "$outputs"}.get(
            str(data.get("type"))
        )
        if target and all(isinstance(position.get(k), int | float) for k in ("x", "y")):
            x, y = float(position["x"]), float(position["y"])
            if data.get("type") == "answer" and ctx.answer:
                ctx.b.layout[ctx.answer], x = (x * SPREAD[0], y * SPREAD[1]), x + 340.0
                ctx.answer = None
            ctx.b.layout[target] = (x * SPREAD[0], y * SPREAD[1])
    for node_id in stand_ins:
        ctx.b.retarget(node_id, "result")
    _guards(ctx, nodes, edges)


def _ordered(nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Nodes in the order of the edges (so a node's sources are converted before it)."""
    incoming: dict[str, set[str]] = {str(n["id"]): set() for n in nodes}
    for e in edges:
        incoming[str(e["target"])].add(str(e["source"]))
    done: list[dict[str, Any]] = []
    left = list(nodes)
    while left:
        ready = [n for n in left if incoming[str(n["id"])] <= {str(d["id"]) for d in done}] or left[:1]
        done.append(ready[0])
        left.remove(ready[0])
    return done


def _guards(ctx: Ctx, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> None:
    """Branches: a node after an if-else case or a classifier class gets a `when:`; a node all of
    whose incoming edges carry the same guard inherits it; a join (different guards) runs."""
    guard: dict[str, str | None] = {}
    for node in _ordered(nodes, edges):
        dify_id = str(node["id"])
        found = set()
        for e in (e for e in edges if str(e["target"]) == dify_id):
            found.add(_edge_guard(ctx, e, guard))
        guard[dify_id] = found.pop() if len(found) == 1 else None
        node_id = ctx.ids.get(dify_id)
        if guard[dify_id] and node_id in ctx.b.nodes:
            ctx.b.nodes[node_id]["when"] = guard[dify_id]


def _edge_guard(ctx: Ctx, edge: dict[str, Any], guard: dict[str, str | None]) -> str | None:
    source = str(edge["source"])
    own = guard.get(source)
    handle = str(edge.get("sourceHandle") or "source")
    node_id = ctx.ids.get(source)
    kind = ctx.kind(source)
    if kind == "if-else" and node_id:
        mine = f"{node_id}.text == {json.dumps(handle)}"
    elif kind == "question-classifier" and node_id:
        classes = {str(c.get("id")): str(c.get("name")) for c in ctx.by_id[source]["data"].get("classes") or []}
        mine = f"{node_id}.label == {json.dumps(classes.get(handle, handle))}"
    else:
        return own
    return f"({own}) and {mine}" if own else mine


def _convert(
    ctx: Ctx,
    node: dict[str, Any],
    entry: NodeReport,
    every: list[dict[str, Any]],
    edges: list[dict[str, Any]],
    source: Path,
) -> None:
    data, dify_id = node["data"], str(node["id"])
    kind = str(data.get("type"))
    handlers = HANDLERS
    if kind == "iteration-start":
        return
    if kind == "iteration":
        spec = _iteration(ctx, node, entry, every, edges, source)
    elif kind in handlers:
        try:
            spec = handlers[kind](ctx, data, entry)
        except (AttributeError, TypeError, KeyError) as err:  # a field of another shape than the DSL's
            entry.refuse(f"a field is not in the shape Dify writes ({type(err).__name__}: {err})")
            return
    else:
        entry.refuse(f"Dify node type {kind!r} has no built-in equivalent")
        return
    if spec is not None and dify_id in ctx.ids:
        spec.setdefault("description", f"Dify: {data.get('title') or kind}")
        ctx.b.nodes[ctx.ids[dify_id]] = spec


def _iteration(
    ctx: Ctx,
    node: dict[str, Any],
    entry: NodeReport,
    every: list[dict[str, Any]],
    edges: list[dict[str, Any]],
    source: Path,
) -> dict[str, Any] | None:
    data, dify_id = node["data"], str(node["id"])
    body = [n for n in every if str(n.get("parentId")) == dify_id]
    name = f"{source.stem}-{ctx.ids[dify_id]}".replace("_", "-").lower()
    sub = FlowBuilder(name, f"The body of Dify iteration {data.get('title')!r}")
    sub_report = ImportReport(ctx.report.file)
    inner = Ctx(sub, sub_report, every, ctx.lines)
    inner.item = dify_id
    inner.b.inputs["item"] = {"type": "any"}
    _convert_graph(inner, body, edges, every, source, False)
    selector = data.get("output_selector") or []
    inner.b.outputs["output"] = inner.wire(selector)
    ctx.report.nodes += sub_report.nodes
    for n in sub_report.nodes:
        if n.status == "not converted":
            entry.refuse(f"its body has a node not converted ({n.source})")
            return None
    inner.b.models = {**ctx.b.models, **inner.b.models}
    inputs: dict[str, Any] = {"items": ctx.wire(data.get("iterator_selector"))}
    item = "item"
    if "index" in inner.b.inputs:
        inputs["items"], item = _numbered(ctx, inner.b, ctx.ids[dify_id], inputs["items"]), "entry"
        entry.notes.append("its body reads the index: the items are numbered first ({item, index} each)")
    for input_name, selector_text in inner.outer.items():
        inputs[input_name] = ctx.wire(json.loads(selector_text))
    file = f"parts/{name}.yaml"
    ctx.b.sub_flows[file] = sub.build(
        sub_report, f"Body of the Dify iteration {data.get('title')!r}, imported with {source.name}."
    )
    return {"type": with_role("map"), "inputs": inputs, "config": {"flow": file, "item": item}}


NUMBER_CODE = 'result = [{"item": item, "index": i} for i, item in enumerate(items or [])]\n'
"""Pairs each item with its index, for a body that reads the iteration's index."""


def _numbered(ctx: Ctx, body: FlowBuilder, near: str, items: Any) -> str:
    """Number the items in the flow (a code.python node); the body reads `item` and `index` from
    its input `entry`. Returns the wire to the numbered list."""
    node_id = ctx.b.new_id(f"{near}_numbered")
    ctx.b.nodes[node_id] = {
        "type": with_role("python_code"),
        "description": "The items with their index (the iteration's body reads it)",
        "inputs": {"items": items},
        "config": {"code": NUMBER_CODE},
    }
    del body.inputs["item"], body.inputs["index"]
    body.inputs["entry"] = {"type": "dict", "description": "One item and its index"}
    for name in ("item", "index"):
        body.rewire(f"$inputs.{name}", body.field("$inputs.entry", name, "entry"))
    return f"${node_id}.result"
