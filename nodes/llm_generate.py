"""`llm.generate`: render a prompt over the inputs, return the model's text."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nodes import strategies
from nodes.prompting import Form, chat_messages, completion_text
from nodes.strategies import Prompt, Strategy
from studio.node import Node, NodeContext, TemplateInputs, Tunable, render

FINAL_REQUEST = "Now give only the final answer."
FINAL_CUE = "Therefore, the answer is:"


class Generate(Node):
    """Generate text from a prompt template."""

    uses_model = True
    tunable = Tunable(fields=("instructions", "demos", "form", "strategy", "samples", "stop"), output="text")

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
        strategy: Strategy = "single"
        """`single` call; `reasoning` (think, then answer); `ensemble` (`samples` answers, majority
        vote); `reflect` (draft, critique, revise)."""
        samples: int = Field(default=3, ge=1, le=15)
        """How many answers an `ensemble` samples."""

    Inputs = TemplateInputs

    class Outputs(BaseModel):
        text: str
        """The model's answer, stripped of surrounding whitespace."""

    config: Config

    def model_calls(self) -> float:
        return strategies.calls(self.config.strategy, self.config.samples)

    def templates(self) -> list[tuple[str, str]]:
        return [
            ("prompt", self.config.prompt),
            ("system", self.config.system),
            ("instructions", self.config.instructions),
        ]

    def render_prompt(self, values: dict[str, Any]) -> Prompt:
        """The prompt for `values`, in the configured form."""
        c = self.config
        preamble = "\n\n".join(p for p in (render(c.system, values), render(c.instructions, values)) if p)
        demos = [dict(d) for d in c.demos]
        if c.form == "chat":
            return Prompt(messages=tuple(chat_messages(preamble, c.prompt, demos, "text", values)))
        return Prompt(text=completion_text(preamble, c.prompt, demos, "text", values))

    async def run(self, inputs: TemplateInputs, ctx: NodeContext) -> Outputs:
        c = self.config

        async def ask(prompt: Prompt, **options: Any) -> str:
            options.setdefault("stop", c.stop)
            options.setdefault("max_tokens", c.max_tokens)
            reply = await ctx.llm.complete(**prompt.request(), **options)
            return reply.text.strip()

        prompt = self.render_prompt(inputs.values())
        if c.strategy == "ensemble":
            return self.Outputs(text=strategies.majority(await strategies.samples(prompt, ask, c.samples)))
        final = await strategies.deliberate(c.strategy, prompt, ask, FINAL_REQUEST, FINAL_CUE)
        return self.Outputs(text=await ask(final))
