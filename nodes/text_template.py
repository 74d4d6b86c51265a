"""`text.template`: render a sandboxed Jinja2 template over the inputs."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from studio.node import Node, NodeContext, TemplateInputs, render


class Template(Node):
    """Build text from a template; no model involved."""

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        template: str
        """Jinja2 template (sandboxed); each variable is an input."""
        optional: list[str] = []
        """Template variables that may stay unwired (or come from a skipped node): they render as
        "" (or as their `default` filter's value). A variable read as `{{ x | default('...') }}` is
        optional without being listed."""

    Inputs = TemplateInputs

    class Outputs(BaseModel):
        text: str
        """The rendered text."""

    config: Config
    reshapes = True

    def templates(self) -> list[tuple[str, str]]:
        return [("template", self.config.template)]

    async def run(self, inputs: TemplateInputs, ctx: NodeContext) -> Outputs:
        return self.Outputs(text=render(self.config.template, inputs.values()))
