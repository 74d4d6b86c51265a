"""A lint for flows written for the old readiness rule: a list input that gathers wires from
branches (`values: [$a.text, $b.text]`, Haystack's variadic idiom).

Under the readiness rule a required input with a gone wire skips its node, so such a node is
skipped whenever one of the listed nodes did not run, and the flow returns null without a
word. `control.join` is the construct that gathers branches; `flowstudio validate` warns, and
`flowstudio fmt --fix` inserts the join (`studio.flow.fmt.insert_joins`).
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.errors import FlowWarning
from studio.flow.refs import FLOW_INPUTS, Ref, refs_in
from studio.runtime import registry
from studio.runtime.compiler import Plan, PlanNode
from studio.types import PortType

JOIN_OUTPUT = "values"
"""The output of a node in the `join` role (`studio.node.Role`)."""


def join_type() -> str:
    """The registry key of the node that gathers branches (what the warning and the fix name)."""
    return registry.with_role("join")


@dataclass(frozen=True)
class GatheredList:
    """A list input of a node that lists wires which may be gone."""

    node: str
    """The node's id."""
    port: str
    """The input's name."""
    skippable: tuple[str, ...]
    """The listed nodes that may not run (guarded, on a switch branch, or downstream of one)."""


def gathered_lists(plan: Plan) -> list[GatheredList]:
    """Every list input of a node (not a `gathers` one) with two or more items, one of them a
    wire that may be gone, whose port does not take null items: the node is skipped whenever one
    of those wires is gone."""
    skippable: set[str] = set()
    found: list[GatheredList] = []
    for node_id in plan.order:
        node = plan.nodes[node_id]
        if _may_skip(node, plan, skippable):
            skippable.add(node_id)
        ports: dict[str, PortType] | None = None
        for name, value in node.inputs.items():
            if name == node.node.gathers or not isinstance(value, list) or len(value) < 2:
                continue
            gone = sorted({r.node for r in value if isinstance(r, Ref) and _may_be_gone(r, plan, skippable)})
            if not gone:
                continue
            ports = ports if ports is not None else node.node.input_ports()
            port = ports.get(name)
            if port is not None and port.item is not None and port.item.optional:
                continue
            found.append(GatheredList(node_id, name, tuple(gone)))
    return found


def warnings(plan: Plan) -> list[FlowWarning]:
    """`gathered_lists` in words, each with its file, line and field."""
    flow = plan.flow
    lists = gathered_lists(plan)
    join = join_type() if lists else ""
    return [
        FlowWarning(
            f"this list gathers wires from {', '.join(g.skippable)}, which may not run: the readiness rule "
            f"skips node {g.node!r} whenever one of them is skipped (it ran with nulls under the old rule); "
            f"gather them with a {join} node, which keeps the ones that ran "
            f"(`flowstudio fmt --fix` inserts one)",
            file=flow.file,
            line=flow.line_of("nodes", g.node, "inputs", g.port),
            node=g.node,
            field=f"nodes.{g.node}.inputs.{g.port}",
        )
        for g in lists
    ]


def _may_be_gone(ref: Ref, plan: Plan, skippable: set[str]) -> bool:
    """Whether a wire can read nothing in a run: its node may be skipped, or it is a branch port
    (an output a `routes` node may leave out: not a required field of its Outputs)."""
    if ref.node == FLOW_INPUTS or ref.node not in plan.nodes:
        return False
    source = plan.nodes[ref.node].node
    if ref.node in skippable:
        return True
    field = source.Outputs.model_fields.get(ref.port)
    return source.routes and (field is None or not field.is_required())


def _may_skip(node: PlanNode, plan: Plan, skippable: set[str]) -> bool:
    """Whether the readiness rule may skip `node`: a guard, or a required input wired to a wire
    that may be gone (a `gathers` list only when every option may be, and its node needs one)."""
    if node.when is not None:
        return True
    ports: dict[str, PortType] | None = None
    for name, value in node.inputs.items():
        gone = [r for r in refs_in(value) if _may_be_gone(r, plan, skippable)]
        if not gone:
            continue
        if name == node.node.gathers and isinstance(value, list):
            if not node.node.gathers_none and len(gone) == len(value):
                return True
            continue
        ports = ports if ports is not None else node.node.input_ports()
        port = ports.get(name)
        if port is None or not (port.optional or (isinstance(value, list) and port.item and port.item.optional)):
            return True
    return False
