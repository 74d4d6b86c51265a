"""`flow.call`: run another flow as one node."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from studio.node import NodeContext, SubFlowNode


class FlowCall(SubFlowNode):
    """The sub-flow's inputs are this node's inputs; its outputs are this node's outputs."""

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        flow: str | dict[str, Any]
        """A flow file path relative to this flow, or an inline flow mapping."""

    class Inputs(BaseModel):
        model_config = ConfigDict(extra="allow")

    class Outputs(BaseModel):
        model_config = ConfigDict(extra="allow")

    config: Config

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        outputs = await ctx.call_flow(self.config.flow, dict(inputs.model_extra or {}))
        return self.Outputs(**outputs)
