"""`llm.generate`: render a prompt over the inputs, return the model's text."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from nodes.prompting import Form, chat_messages, completion_text
from studio.node import Node, NodeContext, TemplateInputs, render


class Generate(Node):
    """Generate text from a prompt template."""

    uses_model = True

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        prompt: str
        """Jinja2 template over the node's inputs; each variable is an input."""
        system: str = ""
        """System message (chat form) or preamble (completion form); a template too."""
        instructions: str = ""
        """Task instructions placed before the prompt; the optimizer rewrites these."""
        demos: list[dict[str, object]] = []
        """Worked examples: input values plus the expected `text`."""
        form: Form = "chat"
        """`chat` messages, or one `completion`-style text the model continues."""
        stop: list[str] = []
        """Stop sequences for this node."""
        max_tokens: int | None = Field(default=None, gt=0)
        """Cap on generated tokens; the model alias' setting when omitted."""

    Inputs = TemplateInputs

    class Outputs(BaseModel):
        text: str
        """The model's answer, stripped of surrounding whitespace."""

    config: Config

    def templates(self) -> list[tuple[str, str]]:
        return [
            ("prompt", self.config.prompt),
            ("system", self.config.system),
            ("instructions", self.config.instructions),
        ]

    async def run(self, inputs: TemplateInputs, ctx: NodeContext) -> Outputs:
        values = inputs.values()
        c = self.config
        preamble = "\n\n".join(p for p in (render(c.system, values), render(c.instructions, values)) if p)
        demos = [dict(d) for d in c.demos]
        if c.form == "chat":
            messages = chat_messages(preamble, c.prompt, demos, "text", values)
            reply = await ctx.llm.complete(messages=messages, stop=c.stop, max_tokens=c.max_tokens)
        else:
            prompt = completion_text(preamble, c.prompt, demos, "text", values)
            reply = await ctx.llm.complete(prompt=prompt, stop=c.stop, max_tokens=c.max_tokens)
        return self.Outputs(text=reply.text.strip())
