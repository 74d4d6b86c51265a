"""Prompt flow's aggregation nodes → an aggregate flow run once over a batch's results.

Prompt flow runs an `aggregation: true` node once after a batch, with each of its inputs as the
list of that value over every line, and keeps what it passes to `log_metric` as the run's
metrics. Flowstudio's batch scores rows one at a time, so the per-line nodes stay the flow and
the aggregation nodes become a second flow, `NAME-aggregate.yaml`, written beside it: its one
input `rows` is the list of lines `flowstudio batch --out` writes; each aggregation node is a
`code.python` node that builds its lists from those rows, runs the tool function, and returns
`{value, metrics}` (`log_metric` collects into `metrics`). Every per-line value an aggregation
node reads becomes an output of the flow, so the batch's lines carry it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from studio.importers.build import FlowBuilder, literal
from studio.importers.promptflow_checks import parse_ref, refs
from studio.importers.report import ImportReport, NodeReport
from studio.importers.sources import REQUIRED, sandbox_notes, tool_function
from studio.runtime.registry import with_role

if TYPE_CHECKING:
    from studio.importers.promptflow_ctx import Ctx

SHIM = '''metrics = {}


def log_metric(key, value, variant_id=None):
    """Prompt flow's log_metric: the value joins this node's `metrics` output."""
    metrics[key] = value


'''
"""Stands in for `promptflow.log_metric` (the promptflow imports are taken out of the code)."""


def aggregate_file(ctx: Ctx) -> str:
    """The aggregate flow's file name, beside the flow."""
    return f"{ctx.b.name}-aggregate.yaml"


def how_to_run(ctx: Ctx) -> str:
    """The commands that run the aggregate flow over a batch's results."""
    file = aggregate_file(ctx)
    return (
        f"`flowstudio batch FLOW.yaml --data DATA.jsonl --out rows.jsonl`, then "
        f"`jq -s '{{rows: .}}' rows.jsonl > rows.json` and `flowstudio run {file} --inputs rows.json`"
    )


def convert_aggregation(ctx: Ctx, pending: list[tuple[dict[str, Any], NodeReport]]) -> None:
    """Write the aggregation nodes of `pending` into the aggregate flow (a sub-flow of the import)."""
    if not pending:
        return
    sub = FlowBuilder(aggregate_file(ctx).removesuffix(".yaml"), f"Prompt flow aggregation of {ctx.b.name}")
    sub.inputs["rows"] = {"type": "list", "description": "The lines `flowstudio batch --out` wrote (a JSON list)."}
    done: dict[str, str] = {}
    for node, entry in pending:
        node_id = _aggregation(ctx, sub, node, entry, done)
        if node_id:
            done[node["name"]] = node_id
            sub.outputs[node_id] = sub.field(f"${node_id}.result", "value", node_id)
            sub.outputs[f"{node_id}_metrics"] = sub.field(f"${node_id}.result", "metrics", node_id)
    if done:
        header = f"Aggregation of the Prompt flow {ctx.b.name}, run once over a batch's results:\n{how_to_run(ctx)}."
        ctx.b.sub_flows[aggregate_file(ctx)] = sub.build(ImportReport(ctx.report.file), header)
        ctx.report.notes.append(f"aggregation nodes are in {aggregate_file(ctx)}; run it with {how_to_run(ctx)}")


def _aggregation(
    ctx: Ctx, sub: FlowBuilder, node: dict[str, Any], entry: NodeReport, done: dict[str, str]
) -> str | None:
    """One aggregation node as a code.python node of the aggregate flow; None when refused."""
    if str(node.get("type", "")).lower() != "python" or (node.get("source") or {}).get("type") not in (None, "code"):
        entry.refuse("an aggregation node that is not a Python file: no built-in equivalent")
        return None
    try:
        func = tool_function(ctx.source_text(str((node.get("source") or {}).get("path", "")), entry))
    except ValueError as err:
        entry.refuse(str(err))
        return None
    given = node.get("inputs") or {}
    missing = [p for p, d in func.params.items() if d is REQUIRED and p not in given]
    if missing:
        entry.refuse(f"required parameter {missing[0]!r} has no input")
        return None
    unread = [h for h in refs(given) if h not in done and ctx.kinds.get(h) and _is_aggregation(ctx, h)]
    if unread:
        entry.refuse(f"it reads the aggregation node {unread[0]!r}, which is not converted (or comes later)")
        return None
    inputs: dict[str, Any] = {"rows": "$inputs.rows"}
    lines = []
    for name, value in given.items():
        if name not in func.params:
            continue
        lines.append(f"{name} = {_reader(ctx, sub, name, value, inputs, done)}")
    node_id = sub.new_id(node["name"])
    call = ", ".join(f"{n}={n}" for n in given if n in func.params)
    body = "\n".join(lines)
    code = f'{SHIM}{func.code}\n\n{body}\nresult = {{"value": {func.name}({call}), "metrics": metrics}}\n'
    sub.nodes[node_id] = {
        "type": with_role("python_code"),
        "inputs": inputs,
        "config": {"code": code},
        "description": f"Prompt flow aggregation node {node['name']}: once over the batch",
    }
    entry.approximate(f"runs once over a batch's results in {aggregate_file(ctx)}: {how_to_run(ctx)}")
    for note in sandbox_notes(func):
        entry.approximate(note)
    return node_id


def _reader(ctx: Ctx, sub: FlowBuilder, name: str, value: Any, inputs: dict[str, Any], done: dict[str, str]) -> str:
    """Python that builds the value of parameter `name` from the batch's rows (or takes it as given)."""
    found = parse_ref(value)
    if found is None:
        inputs[f"given_{name}"] = literal(value)
        return f"given_{name}"
    head, rest = found
    if head in done:
        inputs[f"given_{name}"] = sub.field(f"${done[head]}.result", "value", done[head])
        return f"given_{name}"
    if head == "inputs" and "." not in rest:
        return f'[(row.get("inputs") or {{}}).get({rest!r}) for row in rows]'
    column = _line_output(ctx, name, value)
    return f'[(row.get("outputs") or {{}}).get({column!r}) for row in rows]'


def _is_aggregation(ctx: Ctx, name: str) -> bool:
    """Whether the source node `name` is an aggregation node."""
    nodes = ctx.doc.data.get("nodes") or []
    return any(isinstance(n, dict) and n.get("name") == name and n.get("aggregation") for n in nodes)


def _line_output(ctx: Ctx, name: str, value: Any) -> str:
    """The flow output carrying `value` on every line (an existing one, else a new `agg_NAME`)."""
    wire = ctx.wire(value)
    for output, existing in ctx.b.outputs.items():
        if existing == wire:
            return output
    column, n = f"agg_{name}", 2
    while column in ctx.b.outputs:
        column, n = f"agg_{name}_{n}", n + 1
    ctx.b.outputs[column] = wire
    ctx.report.notes.append(f"output `{column}` added: the aggregation reads it from every line")
    return column
