"""`llm.generate`: render a prompt over the inputs, return the model's text."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nodes import strategies
from nodes.prompting import Form, chat_messages, completion_text, history, transcript
from nodes.strategies import Prompt, Strategy
from studio.node import Node, NodeContext, PortType, TemplateInputs, Tunable, render

MESSAGES = "messages"

FINAL_REQUEST = "Now give only the final answer."
FINAL_CUE = "Therefore, the answer is:"


class Generate(Node):
    """Generate text from a prompt template."""

    uses_model = True
    tunable = Tunable(
        fields=("instructions", "demos", "form", "strategy", "samples", "stop"), output="text", drafts=True
    )

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
        optional: list[str] = []
        """Template variables that may stay unwired (or come from a skipped node): they render as
        "" (or as their `default` filter's value). A variable read as `{{ x | default('...') }}` is
        optional without being listed."""

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

    def input_ports(self) -> dict[str, PortType]:
        """The template's variables, plus the optional conversation `messages`."""
        return {**super().input_ports(), MESSAGES: PortType("messages", optional=True)}

    def optional_inputs(self) -> set[str]:
        return super().optional_inputs() | {MESSAGES}

    def render_prompt(self, values: dict[str, Any]) -> Prompt:
        """The prompt for `values`, in the configured form.

        A wired `messages` conversation goes after the demos (chat form: as its turns, then the
        prompt as the last user turn unless it renders empty; completion form: as text lines).
        """
        c = self.config
        turns = history(values)
        preamble = "\n\n".join(p for p in (render(c.system, values), render(c.instructions, values)) if p)
        demos = [dict(d) for d in c.demos]
        if c.form == "chat":
            messages = chat_messages(preamble, c.prompt, demos, "text", values)
            last = [messages[-1]] if messages[-1].content.strip() or not turns else []
            return Prompt(messages=tuple([*messages[:-1], *turns, *last]))
        preamble = "\n\n".join(p for p in (preamble, transcript(turns)) if p)
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
