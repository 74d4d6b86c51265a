"""`tool.mcp`: call one tool of an MCP server with typed arguments.

The node's inputs are the tool's arguments. `arguments` declares their port types, so the
compiler checks the wires (the server itself is never contacted before a run); the server's
own JSON Schema is checked by the server. The session is the run's: one per server per run.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from studio.node import (
    McpServer,
    Node,
    NodeContext,
    NodeError,
    PortType,
    TemplateInputs,
    parse_type,
    refuse_mcp_command,
)


class McpCall(Node):
    """Call one tool of an MCP server (streamable HTTP or an allowlisted stdio command)."""

    span_kind = "TOOL"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        server: McpServer
        """The MCP server: `url` (+ `headers`) or `command` (+ `args`, `env`), `timeout_s`."""
        tool: str = Field(min_length=1)
        """The tool's name on the server."""
        arguments: dict[str, str] = {}
        """Argument name → port type (`str`, `int`, `list[str]`, `float | null`, ...); each is an input."""

    class Inputs(TemplateInputs):
        """The tool's arguments, by name."""

    class Outputs(BaseModel):
        result: Any
        """Structured content when the server sends it, else the text as JSON if it parses, else the text."""
        text: str
        """The text the tool returned."""

    config: Config

    def check(self) -> list[tuple[str, str]]:
        if refused := refuse_mcp_command(self.config.server):
            return [("server.command", refused)]
        for name, kind in self.config.arguments.items():
            try:
                parse_type(kind)
            except ValueError as err:
                return [(f"arguments.{name}", str(err))]
        return []

    def input_ports(self) -> dict[str, PortType]:
        return {name: parse_type(kind) for name, kind in self.config.arguments.items()}

    def required_inputs(self) -> set[str]:
        return {name for name, port in self.input_ports().items() if not port.optional}

    def _arguments(self, given: dict[str, Any]) -> dict[str, Any]:
        ports = self.input_ports()
        if not ports:
            return given
        unknown = sorted(set(given) - set(ports))
        if unknown:
            raise NodeError(f"input {unknown[0]!r} is not one of `arguments` {sorted(ports)}", kind="bad_input")
        values = {}
        for name, value in given.items():
            try:
                values[name] = TypeAdapter(ports[name].python()).validate_python(value)
            except ValidationError as err:
                message = err.errors(include_url=False)[0]["msg"]
                raise NodeError(f"argument {name!r} must be {ports[name]}: {message}", kind="bad_input") from None
        return values

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        arguments = self._arguments(inputs.values())
        result = await ctx.mcp_call(self.config.server, self.config.tool, arguments)
        if result.is_error:
            raise NodeError(f"MCP tool {self.config.tool!r} failed: {result.text}"[:2000], kind="tool_error")
        return self.Outputs(result=result.data, text=result.text)
