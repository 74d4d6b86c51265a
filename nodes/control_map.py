"""`control.map`: run a sub-flow per item of a list, bounded concurrency, ordered results."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from studio.node import Node, NodeContext, PortType, Role


class Map(Node):
    """Each item goes to the sub-flow input named by `item`; other inputs go to every sub-run."""

    roles: ClassVar[frozenset[Role]] = frozenset({"map"})

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        flow: str | dict[str, Any]
        """The sub-flow: a path relative to this flow, or an inline flow mapping."""
        item: str = "item"
        """Name of the sub-flow input that receives each item."""
        concurrency: int = Field(default=4, ge=1, le=256)
        """How many sub-runs at once."""

    class Inputs(BaseModel):
        model_config = ConfigDict(extra="allow")

        items: list[Any]
        """The list to map over."""

    class Outputs(BaseModel):
        results: list[dict[str, Any]]
        """The sub-flow's outputs for each item, in input order."""

    config: Config

    def check(self) -> list[tuple[str, str]]:
        ports = self.sub_flow_signature(self.config.flow)[0]
        if self.config.item not in ports:
            return [("item", f"the sub-flow has no input {self.config.item!r}; its inputs are {sorted(ports)}")]
        return []

    def input_ports(self) -> dict[str, PortType]:
        ports = dict(self.sub_flow_signature(self.config.flow)[0])
        item = ports.pop(self.config.item)
        return {"items": PortType("list", item), **ports}

    def required_inputs(self) -> set[str]:
        return {"items"} | (self.sub_flow_signature(self.config.flow)[1] - {self.config.item})

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        shared = dict(inputs.model_extra or {})
        results: list[dict[str, Any]] = [{} for _ in inputs.items]
        pending = iter(enumerate(inputs.items))

        async def worker() -> None:
            # `concurrency` workers share one iterator: memory stays bounded by the worker
            # count, not the number of items (a map over 100,000 items starts 4 coroutines).
            for index, item in pending:
                results[index] = await ctx.call_flow(self.config.flow, {**shared, self.config.item: item}, str(index))

        workers = [asyncio.create_task(worker()) for _ in range(min(self.config.concurrency, len(inputs.items)))]
        try:
            await asyncio.gather(*workers)
        finally:
            for task in workers:
                task.cancel()
        return self.Outputs(results=results)
