"""`control.join`: a list of every option that is not skipped (`[]` when every one is)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from studio.node import Node, NodeContext, Role


class Join(Node):
    """Gather branches into one list; skipped options are left out (a null from a node that ran stays)."""

    gathers: ClassVar[str | None] = "options"
    gathers_none: ClassVar[bool] = True
    roles: ClassVar[frozenset[Role]] = frozenset({"join"})

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        order: Literal["wiring", "arrival"] = "wiring"
        """`wiring`: options in the order they are listed; `arrival`: in the order their nodes
        finished (flow inputs and literals first)."""

    class Inputs(BaseModel):
        options: list[Any]
        """References to the branches (and any literals or flow inputs)."""

    class Outputs(BaseModel):
        values: list[Any]
        """Every option whose node ran; `[]` when none did."""

    config: Config

    def gather_order(self) -> Literal["wiring", "arrival"]:
        return self.config.order

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        return self.Outputs(values=list(inputs.options))
