"""`tool.python`: call a Python function by its tool name; ports follow its signature.

A parameter with a default is an optional input: a wire from a skipped node (or a null) leaves
it at its default, as an optional template variable renders its default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from nodes import tooling
from studio.node import ANY, Node, NodeContext, PortType, Role, TemplateInputs, registered_tool


class PythonTool(Node):
    """Call a Python function listed in the flow's `tools:` or installed as a `flowstudio.tools` entry point."""

    span_kind = "TOOL"
    roles: ClassVar[frozenset[Role]] = frozenset({"tool_call"})

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        tool: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
        """Tool name: a key of the flow's `tools:` section or an installed `flowstudio.tools` entry point."""
        timeout_s: float | None = Field(default=None, gt=0)
        """Give up on the call after this many seconds."""

    class Inputs(TemplateInputs):
        """The function's arguments, by parameter name."""

    class Outputs(BaseModel):
        result: Any
        """What the function returned, as JSON data."""

    config: Config

    def _installed(self) -> tooling.Tool | None:
        """The entry-point tool, which the signature can be read from at compile time."""
        try:
            return registered_tool(self.config.tool)
        except Exception:
            return None

    def input_ports(self) -> dict[str, PortType]:
        tool = self._installed()
        return ports_of(tool) if tool else {}

    def ready_ports(self, tools: Mapping[str, Callable[..., Any]]) -> dict[str, PortType]:
        """The ports of the flow's own tool too (known once the run has imported it)."""
        tool = tools.get(self.config.tool) or self._installed()
        return ports_of(tool) if tool else {}

    def required_inputs(self) -> set[str]:
        tool = self._installed()
        return tooling.required(tool) if tool else set()

    def output_ports(self) -> dict[str, PortType]:
        tool = self._installed()
        return {"result": tooling.output_port(tool) if tool else ANY}

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        name = self.config.tool
        tool = ctx.tool(name)
        defaulted = set(tooling.input_ports(tool)) - tooling.required(tool)
        # A null for a parameter with a default (a wire from a skipped node) reads the default.
        arguments = {k: v for k, v in inputs.values().items() if not (v is None and k in defaulted)}
        result = await tooling.call(name, tool, arguments, self.config.timeout_s)
        return self.Outputs(result=result)


def ports_of(tool: tooling.Tool) -> dict[str, PortType]:
    """The tool's parameters as ports; one with a default is optional (`T | null`): a wire from a
    skipped node, or a null, leaves the parameter at its default."""
    optional = set(tooling.input_ports(tool)) - tooling.required(tool)
    return {
        name: PortType(port.name, port.item, optional=True) if name in optional else port
        for name, port in tooling.input_ports(tool).items()
    }
