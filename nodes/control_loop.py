"""`control.loop`: run a sub-flow until a condition holds or `max_iterations` is reached."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from studio.node import NodeContext, NodeError, PortType, SubFlowNode, evaluate, expression_problem

ITERATIONS = "iterations"


class Loop(SubFlowNode):
    """Outputs named like a sub-flow input feed the next iteration."""

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        flow: str | dict[str, Any]
        """The sub-flow: a path relative to this flow, or an inline flow mapping."""
        until: str
        """Sandboxed expression over `outputs` (the last iteration's outputs); true stops the loop."""
        max_iterations: int = Field(ge=1, le=1000)
        """Hard bound on iterations."""
        on_limit: Literal["fail", "stop"] = "fail"
        """At the bound without `until` true: fail the node, or stop and return the last outputs."""
        collect: list[str] = []
        """Sub-flow outputs accumulated over iterations: each is output as the list of its value in
        every iteration, in order, instead of the last one (`until` still sees the last one)."""

    class Inputs(BaseModel):
        model_config = ConfigDict(extra="allow")

    class Outputs(BaseModel):
        model_config = ConfigDict(extra="allow")

        iterations: int
        """How many iterations ran."""

    config: Config

    def check(self) -> list[tuple[str, str]]:
        outputs = self.sub_flow()[2]
        if ITERATIONS in outputs:
            return [
                (
                    "flow",
                    f"the sub-flow has an output named {ITERATIONS!r}, which control.loop uses for its count; rename it",
                )
            ]
        for i, name in enumerate(self.config.collect):
            if name not in outputs:
                return [(f"collect.{i}", f"the sub-flow has no output {name!r}; its outputs are {sorted(outputs)}")]
        problem = expression_problem(self.config.until, {"outputs": set(outputs), "iteration": None})
        return [("until", f"`until` {problem}")] if problem else []

    def output_ports(self) -> dict[str, PortType]:
        ports = {
            name: PortType("list", port) if name in self.config.collect else port
            for name, port in self.sub_flow()[2].items()
        }
        return {**ports, ITERATIONS: PortType("int")}

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        state = dict(inputs.model_extra or {})
        accepted = set(self.sub_flow()[0])
        outputs: dict[str, Any] = {}
        collected: dict[str, list[Any]] = {name: [] for name in self.config.collect}
        for iteration in range(1, self.config.max_iterations + 1):
            outputs = await ctx.call_flow(self.config.flow, state, str(iteration))
            for name, values in collected.items():
                values.append(outputs.get(name))
            if evaluate(self.config.until, {"outputs": outputs, "iteration": iteration}):
                return self.Outputs(**{**outputs, **collected, ITERATIONS: iteration})
            state.update({k: v for k, v in outputs.items() if k in accepted})
        if self.config.on_limit == "stop":
            return self.Outputs(**{**outputs, **collected, ITERATIONS: self.config.max_iterations})
        raise NodeError(
            f"loop reached max_iterations={self.config.max_iterations} without `until` being true", kind="loop_limit"
        )
