"""The node API: all a node type (built-in or third-party) may import from flowstudio.

A node type is a `Node` subclass with a pydantic `Config`, `Inputs` and `Outputs` and one
`async def run(self, inputs, ctx)`. It reaches the world only through `NodeContext`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from studio.errors import NodeError, OutputError, TemplateError
from studio.flow import templates
from studio.models.base import Completion, Message
from studio.tools import registered_tool
from studio.types import ANY, PortType, from_annotation, parse_type

__all__ = [
    "ANY",
    "LLM",
    "NO_VALUE",
    "Completion",
    "FlowCaller",
    "Message",
    "Node",
    "NodeContext",
    "NodeError",
    "OutputError",
    "PortType",
    "SubFlowNode",
    "TemplateError",
    "TemplateInputs",
    "ToolCall",
    "ToolCallingLLM",
    "ToolReply",
    "WaitingForInput",
    "evaluate",
    "expression_problem",
    "from_annotation",
    "parse_type",
    "registered_tool",
    "render",
    "sub_flow_signature",
]

render = templates.render
evaluate = templates.evaluate
expression_problem = templates.expression_problem


class LLM(Protocol):
    """The node's model, bound to its alias settings; every call is traced and budgeted."""

    async def complete(
        self,
        *,
        messages: list[Message] | None = None,
        prompt: str | None = None,
        stop: list[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Completion: ...


@dataclass(frozen=True)
class ToolCall:
    """A tool call the provider's function calling asked for."""

    name: str
    arguments: dict[str, Any]
    id: str = ""


@dataclass(frozen=True)
class ToolReply:
    """A reply to `complete_with_tools`: text, or tool calls, or both."""

    text: str
    calls: list[ToolCall]
    completion: Completion


@runtime_checkable
class ToolCallingLLM(Protocol):
    """Optional capability of `ctx.llm`: the provider's function calling (`llm.agent` uses it)."""

    def supports_tools(self) -> bool:
        """Whether the model takes tools natively (litellm's `supports_function_calling`)."""
        ...

    async def complete_with_tools(
        self, *, messages: list[Message], tools: list[dict[str, Any]], max_tokens: int | None = None
    ) -> ToolReply:
        """One chat call offering `tools` (OpenAI function schemas); traced like `complete`."""
        ...


class FlowCaller(Protocol):
    """Runs a sub-flow inside the current run; returns its outputs or raises NodeError."""

    async def __call__(self, flow: str | dict[str, Any], inputs: dict[str, Any], label: str = "") -> dict[str, Any]: ...


async def _no_sub_flows(flow: str | dict[str, Any], inputs: dict[str, Any], label: str = "") -> dict[str, Any]:
    raise NodeError("sub-flows are not available here", kind="no_sub_flows")


class WaitingForInput(Exception):
    """Raised by a node that needs a person's value; the run stops with status `waiting`."""

    def __init__(self, prompt: str) -> None:
        super().__init__(prompt)
        self.prompt = prompt


NO_VALUE: Any = object()


@dataclass
class NodeContext:
    """What a running node may use."""

    run_id: str
    node_id: str
    """The node's id, prefixed by its parents' inside sub-flows (`map[2].summarise`)."""
    flow_dir: Path
    """Directory of the flow file; relative paths in config resolve against it."""
    llm: LLM
    """The node's model (its alias, settings, cache, retries, budget)."""
    attempt: int = 1
    call_flow: FlowCaller = _no_sub_flows
    """Run a sub-flow (a path relative to `flow_dir`, or an inline mapping) in this run."""
    supplied: Any = NO_VALUE
    """A value a person supplied on resume (`--value NODE=VALUE`), else NO_VALUE."""
    extra: dict[str, Any] = field(default_factory=dict)
    tools: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """The flow's `tools:` section, resolved (`studio.tools.resolve_tools`)."""

    def tool(self, name: str) -> Callable[..., Any]:
        """The tool `name`: from the flow's `tools:` section, else the `flowstudio.tools` entry points."""
        found = self.tools.get(name) or registered_tool(name)
        if found is None:
            raise NodeError(
                f"unknown tool {name!r}: list it under the flow's `tools:` or register it in the "
                f"`flowstudio.tools` entry-point group (flow tools: {sorted(self.tools)})",
                kind="unknown_tool",
            )
        return found


class TemplateInputs(BaseModel):
    """Inputs of template nodes: any names, each one a template variable."""

    model_config = ConfigDict(extra="allow")

    def values(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


def sub_flow_signature(
    source: str | dict[str, Any], base_dir: Path
) -> tuple[dict[str, PortType], set[str], dict[str, PortType]]:
    """Input ports, required inputs and output ports of a sub-flow (raises FlowError)."""
    from studio.runtime.subflows import signature

    return signature(source, base_dir)


class Node:
    """Base of every node type."""

    Config: ClassVar[type[BaseModel]]
    Inputs: ClassVar[type[BaseModel]]
    Outputs: ClassVar[type[BaseModel]]
    uses_model: ClassVar[bool] = False
    """Whether the node calls a model (gets `ctx.llm` for its alias)."""
    flow_dir: Path = Path(".")
    """Directory of the flow the node belongs to; the compiler sets it."""

    def __init__(self, config: BaseModel) -> None:
        self.config = config

    async def run(self, inputs: Any, ctx: NodeContext) -> BaseModel:
        raise NotImplementedError

    def templates(self) -> list[tuple[str, str]]:
        """(config field, template source) pairs whose variables are the node's inputs."""
        return []

    def check(self) -> list[tuple[str, str]]:
        """Compile-time problems with the config, as (field, message) pairs."""
        return []

    def input_ports(self) -> dict[str, PortType]:
        """Named input ports and their types."""
        if issubclass(self.Inputs, TemplateInputs):
            return {name: ANY for _, source in self.templates() for name in templates.variables(source)}
        return {name: from_annotation(f.annotation) for name, f in self.Inputs.model_fields.items()}

    def required_inputs(self) -> set[str]:
        """Inputs that must be wired or given a literal."""
        if issubclass(self.Inputs, TemplateInputs):
            return set(self.input_ports())
        return {name for name, f in self.Inputs.model_fields.items() if f.is_required()}

    def refuse_value(self, value: Any) -> str | None:
        """Why a value supplied on resume is not acceptable (None when it is)."""
        return None

    def output_ports(self) -> dict[str, PortType]:
        return {name: from_annotation(f.annotation) for name, f in self.Outputs.model_fields.items()}


class SubFlowNode(Node):
    """A node whose ports are a sub-flow's (`config.flow`): `flow.call`, `control.loop`."""

    def sub_flow(self) -> tuple[dict[str, PortType], set[str], dict[str, PortType]]:
        config: Any = self.config
        flow: str | dict[str, Any] = config.flow
        return sub_flow_signature(flow, self.flow_dir)

    def check(self) -> list[tuple[str, str]]:
        self.sub_flow()
        return []

    def input_ports(self) -> dict[str, PortType]:
        return self.sub_flow()[0]

    def required_inputs(self) -> set[str]:
        return self.sub_flow()[1]

    def output_ports(self) -> dict[str, PortType]:
        return self.sub_flow()[2]
