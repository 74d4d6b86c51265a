"""`text.template`: render a sandboxed Jinja2 template over the inputs."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from studio.node import Node, NodeContext, OptionalVariables, Role, TemplateInputs, render


class Template(Node):
    """Build text from a template; no model involved."""

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        template: str
        """Jinja2 template (sandboxed); each variable is an input."""
        optional: OptionalVariables = []

    Inputs = TemplateInputs

    class Outputs(BaseModel):
        text: str
        """The rendered text."""

    config: Config
    reshapes = True
    roles: ClassVar[frozenset[Role]] = frozenset({"template"})
    starter = {"template": "{{ text }}"}

    def templates(self) -> list[tuple[str, str]]:
        return [("template", self.config.template)]

    async def run(self, inputs: TemplateInputs, ctx: NodeContext) -> Outputs:
        return self.Outputs(text=render(self.config.template, inputs.values()))
