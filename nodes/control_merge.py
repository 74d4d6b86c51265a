"""`control.merge`: the first option that is not skipped (nor null)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from studio.node import Node, NodeContext, Role


class Merge(Node):
    """Join branches: pass on the first option whose node ran.

    Flow inputs and literals are always available, so `[$branch.text, $inputs.fallback]`
    falls back to the input when `branch` is skipped.
    """

    gathers: ClassVar[str | None] = "options"
    roles: ClassVar[frozenset[Role]] = frozenset({"merge"})

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")

    class Inputs(BaseModel):
        options: list[Any]
        """References to the branches, in order of preference."""

    class Outputs(BaseModel):
        value: Any
        """The first option that is not skipped."""

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        return self.Outputs(value=next((o for o in inputs.options if o is not None), None))
