"""Typed ports of each node as the canvas shows them, also while the flow is still invalid."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from studio.errors import FlowError
from studio.flow.refs import FLOW_INPUTS, Ref
from studio.node import Node, TemplateInputs
from studio.runtime import registry
from studio.runtime.compiler import sub_flow_signature
from studio.types import ANY, PortType, accepts, parse_type


@dataclass(frozen=True)
class Port:
    """One input or output handle."""

    name: str
    type: PortType
    required: bool = False


@dataclass
class NodePorts:
    """A node's handles, and what stops it from compiling on its own."""

    inputs: list[Port] = field(default_factory=list)
    outputs: list[Port] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    templated: bool = False
    """Whether the node takes any named input (template variables): the canvas offers a `+` handle."""

    def input(self, name: str) -> Port | None:
        return next((p for p in self.inputs if p.name == name), None)

    def output(self, name: str) -> Port | None:
        return next((p for p in self.outputs if p.name == name), None)


def instantiate(node_type: str, config: dict[str, Any], flow_dir: Path) -> Node:
    """The node object for a type and config; raises FlowError with the field that is wrong."""
    cls = registry.get(node_type)
    if cls is None:
        hint = registry.suggest(node_type)
        raise FlowError(
            f"unknown node type {node_type!r}" + (f"; did you mean {hint!r}?" if hint else ""), field="type"
        )
    try:
        node = cls(cls.Config.model_validate(config), flow_dir=flow_dir, sub_flows=sub_flow_signature)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        raise FlowError(f"{where}: {first['msg']}", field=f"config.{where}") from None
    return node


def node_ports(node_type: str, config: dict[str, Any], wired: dict[str, Any], flow_dir: Path) -> NodePorts:
    """Ports from the node type's models; wired inputs the type does not know still get a handle."""
    ports = NodePorts()
    try:
        node = instantiate(node_type, config, flow_dir)
        required = node.required_inputs()
        ports.inputs = [Port(n, t, n in required) for n, t in node.input_ports().items()]
        ports.outputs = [Port(n, t) for n, t in node.output_ports().items()]
        ports.templated = issubclass(node.Inputs, TemplateInputs)
    except Exception as err:  # a half-written config must still draw
        ports.errors.append(err.message if isinstance(err, FlowError) else str(err))
    known = {p.name for p in ports.inputs}
    ports.inputs += [Port(name, ANY) for name in wired if name not in known]
    return ports


def flow_input_type(spec: Any) -> PortType:
    """The port type of a flow input's declaration (any when it does not parse)."""
    try:
        return parse_type(str(spec.get("type", "any")) if isinstance(spec, dict) else "any")
    except ValueError:
        return ANY


def source_type(ref: Any, inputs: dict[str, PortType], ports: dict[str, NodePorts]) -> PortType | None:
    """The type of what a `$node.port` reference reads; None when it reads nothing known."""
    if not isinstance(ref, Ref):
        return None
    if ref.node == FLOW_INPUTS:
        return inputs.get(ref.port)
    port = ports[ref.node].output(ref.port) if ref.node in ports else None
    return port.type if port else None


def refusal(source: PortType, target: PortType, what: str) -> str | None:
    """Why `source` cannot feed `target` (None when it can)."""
    if accepts(target, source):
        return None
    return f"cannot connect {what}: {source} does not fit {target}"
