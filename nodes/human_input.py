"""`human.input`: pause the run until a person supplies a value."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from studio.node import NO_VALUE, Node, NodeContext, NodeError, TemplateInputs, WaitingForInput, parse_type, render


class HumanInput(Node):
    """Ask a person; the run waits (exit code 3) until `flowstudio resume RUN --value NODE=VALUE`."""

    waits_for_person = True
    starter = {"prompt": "Please review: {{ text }}"}

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", populate_by_name=True, use_attribute_docstrings=True)

        prompt: str
        """What the person is asked; a template over the node's inputs."""
        value_type: str = Field(default="str", alias="schema")
        """Type of the expected value (`schema:` in the file): str, int, float, bool, dict, list[T]."""

    Inputs = TemplateInputs

    class Outputs(BaseModel):
        value: Any
        """The value the person supplied."""

    config: Config

    def templates(self) -> list[tuple[str, str]]:
        return [("prompt", self.config.prompt)]

    def check(self) -> list[tuple[str, str]]:
        try:
            parse_type(self.config.value_type)
        except ValueError as err:
            return [("schema", str(err))]
        return []

    def refuse_value(self, value: Any) -> str | None:
        try:
            TypeAdapter(parse_type(self.config.value_type).python()).validate_python(value, strict=True)
        except ValidationError as err:
            return f"must be {self.config.value_type}: {err.errors(include_url=False)[0]['msg']}"
        return None

    async def run(self, inputs: TemplateInputs, ctx: NodeContext) -> Outputs:
        if ctx.supplied is NO_VALUE:
            raise WaitingForInput(render(self.config.prompt, inputs.values()))
        problem = self.refuse_value(ctx.supplied)
        if problem:
            raise NodeError(f"value for {ctx.node_id} {problem}", kind="bad_input")
        return self.Outputs(value=ctx.supplied)
