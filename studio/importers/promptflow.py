"""Prompt flow (`flow.dag.yaml`) → a flow file. See docs/importing.md for the mapping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from studio.importers.build import FlowBuilder, Imported, literal
from studio.importers.promptflow_aggregate import convert_aggregation
from studio.importers.promptflow_checks import check_graph, check_shape, deps, refs
from studio.importers.promptflow_connections import connection_tool
from studio.importers.promptflow_ctx import PORTS, Ctx
from studio.importers.promptflow_llm import llm, prompt
from studio.importers.promptflow_tools import convert_package, package_kind
from studio.importers.report import ImportReport, NodeReport
from studio.importers.sources import REQUIRED, load_yaml, sandbox_notes, tool_function
from studio.runtime.registry import with_role

TYPES = {"string": "str", "int": "int", "double": "float", "bool": "bool", "list": "list", "object": "dict"}


def import_promptflow(source: Path, *, allow_placeholders: bool = False) -> Imported:
    """Import a Prompt flow folder (or its `flow.dag.yaml`). Raises FlowError for an invalid source
    (broken YAML, a reference to nothing, a cycle); nodes that cannot be converted are in the report
    (and become failing placeholders only with `allow_placeholders`)."""
    folder = source if source.is_dir() else source.parent
    dag = source / "flow.dag.yaml" if source.is_dir() else source
    doc = load_yaml(dag)
    data = doc.data
    check_shape(doc)
    nodes = [_node_with_variant(n, data) for n in data.get("nodes") or []]
    check_graph(doc, nodes, data)
    report = ImportReport(doc.file)
    ctx = Ctx(folder, doc, FlowBuilder(folder.resolve().name), report)
    for name, spec in (data.get("inputs") or {}).items():
        ctx.b.inputs[name] = _input(spec)
        if isinstance(spec, dict) and spec.get("is_chat_input"):
            report.notes.append(f"input `{name}` is the chat input; `chat_history` (if any) is a plain list input")
    for node in nodes:
        ctx.ids[node["name"]] = ctx.b.new_id(node["name"])
        ctx.kinds[node["name"]] = package_kind(node) or str(node.get("type", ""))
    pending: list[tuple[dict[str, Any], NodeReport]] = []
    for i, node in enumerate(nodes):
        entry = NodeReport(node["name"], str(node.get("type")), doc.line_of(("nodes", i)))
        report.nodes.append(entry)
        if node.get("aggregation"):
            pending.append((node, entry))
            continue
        _convert(ctx, node, entry)
        if entry.status == "not converted" and allow_placeholders:
            ctx.b.placeholder(ctx.ids[node["name"]], f"{node['name']} ({node.get('type')})", entry.notes[-1])
    for name, spec in (data.get("outputs") or {}).items():
        ref = spec.get("reference") if isinstance(spec, dict) else spec
        ctx.b.outputs[name] = ctx.wire(ref)
    convert_aggregation(ctx, pending)
    for entry in report.nodes:
        if entry.status == "not converted" and allow_placeholders:
            ctx.b.retarget(ctx.ids[entry.source], "result")
    header = "\n".join(
        [f"Imported from Prompt flow ({folder.name}/{dag.name}) by `flowstudio import promptflow`.", *ctx.b.origins]
    )
    return ctx.b.build(report, header)


def _node_with_variant(node: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """The node, with its default variant's definition when it `use_variants`."""
    if not node.get("use_variants"):
        return node
    variants = _mapping((data.get("node_variants") or {}).get(node.get("name")))
    every = _mapping(variants.get("variants"))
    chosen = str(variants.get("default_variant_id"))
    body = _mapping(_mapping(every.get(chosen)).get("node"))
    others = sorted(str(k) for k in every if k != chosen)
    return {**node, **body, "name": node["name"], "_variant": chosen, "_others": others}


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _input(spec: Any) -> dict[str, Any]:
    if not isinstance(spec, dict):
        return {"type": "any"}
    out: dict[str, Any] = {"type": TYPES.get(str(spec.get("type", "string")), "any")}
    if spec.get("description"):
        out["description"] = str(spec["description"])
    if "default" in spec:
        default = spec["default"]
        if out["type"] == "float" and isinstance(default, int) and not isinstance(default, bool):
            default = float(default)
        out["default"] = literal(default)
    return out


def _convert(ctx: Ctx, node: dict[str, Any], entry: NodeReport) -> None:
    kind = str(node.get("type", "")).lower()
    source = node.get("source") or {}
    if source.get("type") == "package_with_prompt" and package_kind(node) == "llm":
        node, kind = _chat_tool(node, entry), "llm"
    elif source.get("type") not in (None, "code"):
        if (spec := convert_package(ctx, node, entry)) is not None:
            _activate(ctx, node, spec, entry)
            ctx.b.nodes[ctx.ids[node["name"]]] = spec
        return
    if kind not in PORTS:
        entry.refuse(f"node type {node.get('type')!r} has no built-in equivalent")
        return
    try:
        text = ctx.source_text(str(source.get("path", "")), entry)
    except ValueError as err:
        entry.refuse(str(err))
        return
    node_id = ctx.ids[node["name"]]
    spec = {"python": _python, "llm": llm, "prompt": prompt}[kind](ctx, node, text, entry)
    if spec is None:
        return
    if node.get("_variant"):
        entry.notes.append(
            f"variant {node['_variant']} (the default) taken; not imported: {', '.join(node['_others']) or 'none'}"
        )
        spec["description"] = f"Prompt flow variant {node['_variant']}; other variants: {', '.join(node['_others'])}"
    _activate(ctx, node, spec, entry)
    ctx.b.nodes[node_id] = spec


def _chat_tool(node: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    """A package chat tool (`AzureOpenAI.chat` of promptflow.tools.aoai_gpt4v, ...) read as an llm node."""
    tool = str(node["source"].get("tool"))
    entry.approximate(f"{tool} becomes llm.generate: images in the prompt reach the model as text (their URL or path)")
    return {**node, "provider": "AzureOpenAI" if "AzureOpenAI" in tool else node.get("provider")}


def _activate(ctx: Ctx, node: dict[str, Any], spec: dict[str, Any], entry: NodeReport) -> None:
    activate = node.get("activate")
    if not isinstance(activate, dict):
        if any(d in ctx.skippable for d in deps(node)):
            ctx.skippable.add(node["name"])
        return
    when = ctx.wire(activate.get("when"))
    if not isinstance(when, str) or not when.startswith("$"):
        entry.refuse("`activate.when` is not a reference")
        return
    read = when[1:]
    spec["when"] = f"{read} == {_jinja_literal(activate.get('is'))}"
    ctx.skippable.add(node["name"])


def _jinja_literal(value: Any) -> str:
    if value is None:
        return "none"
    return json.dumps(value, ensure_ascii=False)


def _python(ctx: Ctx, node: dict[str, Any], text: str, entry: NodeReport) -> dict[str, Any] | None:
    try:
        func = tool_function(text)
    except ValueError as err:
        entry.refuse(str(err))
        return None
    connections = [p for p, a in func.annotations.items() if a.endswith("Connection")]
    missing = [p for p, d in func.params.items() if d is REQUIRED and p not in (node.get("inputs") or {})]
    if connections and not [p for p in missing if p not in connections]:
        return connection_tool(ctx, node, func, str(node["source"].get("path")), entry)
    given = node.get("inputs") or {}
    deps = {d for v in given.values() for d in refs(v)}
    inputs: dict[str, Any] = {}
    for name, value in given.items():
        wire = ctx.wire(value)
        if len(deps) > 1 and any(d in ctx.skippable for d in refs(value)):
            default = func.params.get(name, None)
            merge = ctx.b.new_id(f"{ctx.ids[node['name']]}_{name}")
            options = [wire, None if default is REQUIRED else literal(default)]
            ctx.b.nodes[merge] = {
                "type": with_role("merge"),
                "inputs": {"options": options},
                "description": f"{name}: null (the default) when its node was bypassed",
            }
            wire = f"${merge}.value"
        inputs[name] = wire
    missing = [p for p, d in func.params.items() if d is REQUIRED and p not in given]
    if missing:
        entry.refuse(f"required parameter {missing[0]!r} has no input")
        return None
    for note in sandbox_notes(func):
        entry.approximate(note)
    call = ", ".join(f"{n}={n}" for n in given if n in func.params)
    code = f"{func.code}\n\nresult = {func.name}({call})\n"
    return {"type": with_role("python_code"), "inputs": inputs, "config": {"code": code}}
