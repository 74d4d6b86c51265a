"""The node API: all a node type (built-in or third-party) may import from flowstudio.

A node type is a `Node` subclass with a pydantic `Config`, `Inputs` and `Outputs` and one
`async def run(self, inputs, ctx)`. It reaches the world only through `NodeContext`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict

from studio import templates
from studio.errors import NodeError, TemplateError
from studio.models.base import Completion, Message
from studio.types import ANY, PortType, from_annotation

__all__ = [
    "LLM",
    "Completion",
    "Message",
    "Node",
    "NodeContext",
    "NodeError",
    "TemplateError",
    "TemplateInputs",
    "render",
]

render = templates.render


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
    ) -> Completion: ...


@dataclass
class NodeContext:
    """What a running node may use."""

    run_id: str
    node_id: str
    flow_dir: Path
    llm: LLM
    attempt: int = 1
    extra: dict[str, Any] = field(default_factory=dict)


class TemplateInputs(BaseModel):
    """Inputs of template nodes: any names, each one a template variable."""

    model_config = ConfigDict(extra="allow")

    def values(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Node:
    """Base of every node type."""

    Config: ClassVar[type[BaseModel]]
    Inputs: ClassVar[type[BaseModel]]
    Outputs: ClassVar[type[BaseModel]]
    uses_model: ClassVar[bool] = False
    """Whether the node calls a model (gets `ctx.llm` for its alias)."""

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

    def output_ports(self) -> dict[str, PortType]:
        return {name: from_annotation(f.annotation) for name, f in self.Outputs.model_fields.items()}
