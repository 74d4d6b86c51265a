"""A flow's input/output contract, from its compiled plan: the types of its inputs and outputs and
their JSON Schema.

The server (`GET /flows`, `/openapi.json`, request checks), `flowstudio mcp serve` (tool schemas)
and `flowstudio export` (the typed `Inputs`/`Outputs`) all read this module, so a flow offers one
contract everywhere. Defaults are handled one way: an input with a default is not required, its
schema carries the default, and a null default makes its type nullable. An output is nullable
when the node it reads may be skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from studio.flow.refs import FLOW_INPUTS, Ref, refs_in
from studio.runtime.compiler import Plan, load_sub_flow
from studio.types import ANY, PortType, type_of_value

_MESSAGE = {
    "type": "object",
    "properties": {"role": {"type": "string"}, "content": {"type": "string"}},
    "required": ["role", "content"],
}
_JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "dict": "object"}


@dataclass(frozen=True)
class FlowSchema:
    """The JSON Schemas of a flow's inputs and outputs."""

    inputs: dict[str, Any]
    """The object a run's `inputs` must be: one property per declared input, with its description
    and default; the required ones listed; no other property."""
    outputs: dict[str, Any]
    """The object a succeeded run's `outputs` is: one property per flow output, all listed."""


def flow_schema(plan: Plan) -> FlowSchema:
    """The flow's input/output contract as JSON Schema."""
    return FlowSchema(inputs_schema(plan), outputs_schema(plan))


def port_schema(port: PortType) -> dict[str, Any]:
    """`list[int] | null` → `{"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]}`."""
    schema: dict[str, Any]
    if port.name == "any":
        return {}
    if port.name == "list":
        schema = {"type": "array", "items": port_schema(port.item)} if port.item else {"type": "array"}
    elif port.name == "messages":
        schema = {"type": "array", "items": _MESSAGE}
    else:
        schema = {"type": _JSON_TYPES[port.name]}
    return {"anyOf": [schema, {"type": "null"}]} if port.optional else schema


def input_type(plan: Plan, name: str) -> PortType:
    """A flow input's type as callers may give it: its declared type, nullable when its default is null."""
    port, spec = plan.input_types[name], plan.inputs[name]
    if spec.required or spec.default is not None or port.name == "any":
        return port
    return PortType(port.name, port.item, optional=True)


def inputs_schema(plan: Plan) -> dict[str, Any]:
    """`FlowSchema.inputs`: one property per declared input."""
    properties: dict[str, Any] = {}
    for name, spec in plan.inputs.items():
        prop = port_schema(input_type(plan, name))
        if spec.description:
            prop["description"] = spec.description
        if not spec.required:
            prop["default"] = spec.default
        properties[name] = prop
    required = [name for name, spec in plan.inputs.items() if spec.required]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def outputs_schema(plan: Plan) -> dict[str, Any]:
    """`FlowSchema.outputs`: one property per flow output."""
    types = output_types(plan)
    properties = {name: port_schema(types[name]) for name in plan.outputs}
    return {"type": "object", "properties": properties, "required": list(plan.outputs)}


def output_types(plan: Plan) -> dict[str, PortType]:
    """Each flow output's type; optional where the node it reads may be skipped (then it is null)."""
    found = skippable(plan)
    types = {}
    for name, value in plan.outputs.items():
        if isinstance(value, Ref):
            port = _ref_type(plan, value)
            branch = value.node != FLOW_INPUTS and plan.nodes[value.node].node.routes
            if (value.node in found or branch) and port.name != "any":
                port = PortType(port.name, port.item, optional=True)
        elif refs_in(value):
            port = PortType("list") if isinstance(value, list) else PortType("dict") if isinstance(value, dict) else ANY
        else:
            port = type_of_value(value)
        types[name] = port
    return types


def skippable(plan: Plan) -> set[str]:
    """Nodes that may be skipped (the engine's readiness rule, over-approximated): a `when`, or a
    wire from a node that may be skipped or from a switch branch; a `gathers` list (merge, join)
    only when every option is such a wire."""
    found: set[str] = set()

    def maybe_gone(value: Any) -> bool:
        return (
            isinstance(value, Ref)
            and value.node != FLOW_INPUTS
            and (value.node in found or plan.nodes[value.node].node.routes)
        )

    for node_id in plan.order:
        node = plan.nodes[node_id]
        gathered = node.inputs.get(node.node.gathers) if node.node.gathers else None
        wires = [r for name, v in node.inputs.items() if v is not gathered for r in refs_in(v)]
        all_gone = isinstance(gathered, list) and all(maybe_gone(v) for v in gathered)
        if node.when is not None or any(maybe_gone(r) for r in wires) or all_gone:
            found.add(node_id)
    return found


def sub_flow(plan: Plan, node_id: str) -> Plan | None:
    """The compiled sub-flow of a node whose config names one (`flow:`), else None."""
    flow_source = getattr(plan.nodes[node_id].node.config, "flow", None)
    if not isinstance(flow_source, str | dict):
        return None
    return load_sub_flow(flow_source, plan.flow.base_dir, f"{plan.flow.file}:{node_id}")


def _ref_type(plan: Plan, ref: Ref) -> PortType:
    if ref.node == FLOW_INPUTS:
        return input_type(plan, ref.port)
    node = plan.nodes[ref.node].node
    sub = sub_flow(plan, ref.node)
    if sub is not None:
        inner = output_types(sub)
        if ref.port in inner:
            return inner[ref.port]
    return node.output_ports().get(ref.port, ANY)
