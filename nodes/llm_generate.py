"""`llm.generate`: render a prompt over the inputs, return the model's text."""

from __future__ import annotations

import functools
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from nodes import strategies
from nodes.prompting import Form, chat_messages, completion_text, history, transcript
from nodes.strategies import Prompt, Strategy
from studio.node import Node, NodeContext, OptionalVariables, PortType, Role, TemplateInputs, Tunable, render

MESSAGES = "messages"

FINAL_REQUEST = "Now give only the final answer."
FINAL_CUE = "Therefore, the answer is:"


class Generate(Node):
    """Generate text from a prompt template."""

    uses_model = True
    tunable = Tunable(
        fields=("instructions", "demos", "form", "strategy", "samples", "stop", "teacher", "agree"),
        output="text",
        drafts=True,
    )
    starter = {"prompt": "{{ text }}"}
    roles: ClassVar[frozenset[Role]] = frozenset({"completion"})

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
        vote); `reflect` (draft, critique, revise); `cascade` (the student answers when its samples
        agree, else the `teacher` alias, whose answer is kept as a demo)."""
        samples: int = Field(default=3, ge=1, le=15)
        """How many answers an `ensemble` samples (a `cascade`: student samples)."""
        teacher: str = ""
        """`cascade`: the teacher's model alias (the node's own model is the student)."""
        agree: int = Field(default=2, ge=1, le=15)
        """`cascade`: how many student samples must agree for the student's answer to stand."""
        recall: int = Field(default=4, ge=0, le=20)
        """`cascade`: how many of the teacher's past answers (nearest to the input) the student gets as demos."""
        optional: OptionalVariables = []

    Inputs = TemplateInputs

    class Outputs(BaseModel):
        text: str
        """The model's answer, stripped of surrounding whitespace."""

    config: Config

    def model_calls(self) -> float:
        return strategies.calls(self.config.strategy, self.config.samples)

    def check(self) -> list[tuple[str, str]]:
        return strategies.check_cascade(self.config.strategy, self.config.teacher)

    def model_aliases(self) -> list[tuple[str, str]]:
        return [("teacher", self.config.teacher)] if self.config.strategy == "cascade" else []

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

    def render_prompt(self, values: dict[str, Any], recalled: list[dict[str, Any]] | None = None) -> Prompt:
        """The prompt for `values`, in the configured form.

        A wired `messages` conversation goes after the demos (chat form: as its turns, then the
        prompt as the last user turn unless it renders empty; completion form: as text lines).
        `recalled`: a cascade's teacher examples, after the configured demos.
        """
        c = self.config
        turns = history(values)
        preamble = "\n\n".join(p for p in (render(c.system, values), render(c.instructions, values)) if p)
        demos = [dict(d) for d in c.demos] + list(recalled or [])
        if c.form == "chat":
            messages = chat_messages(preamble, c.prompt, demos, "text", values)
            last = [messages[-1]] if messages[-1].content.strip() or not turns else []
            return Prompt(messages=tuple([*messages[:-1], *turns, *last]))
        preamble = "\n\n".join(p for p in (preamble, transcript(turns)) if p)
        return Prompt(text=completion_text(preamble, c.prompt, demos, "text", values))

    def cascade_query(self, values: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """What a cascade's memory keeps an answer under for these input values: the question's
        text, and the input values a demo can hold."""
        return strategies.query_text(self.render_prompt(values)), _plain(values)

    async def run(self, inputs: TemplateInputs, ctx: NodeContext) -> Outputs:
        c = self.config

        async def ask(prompt: Prompt, **options: Any) -> str:
            options.setdefault("stop", c.stop)
            options.setdefault("max_tokens", c.max_tokens)
            reply = await ctx.llm.complete(**prompt.request(), **options)
            return reply.text.strip()

        prompt = self.render_prompt(inputs.values())
        if c.strategy == "cascade":
            values = inputs.values()
            plan = strategies.Cascade(c.teacher, c.samples, c.agree, c.recall, "text")
            query = strategies.query_text(prompt)
            render = functools.partial(self.render_prompt, values)
            done = await strategies.cascade(
                plan, ctx, query, _plain(values), render, stop=c.stop, max_tokens=c.max_tokens
            )
            return self.Outputs(text=done.answer)
        if c.strategy == "ensemble":
            return self.Outputs(text=strategies.majority(await strategies.samples(prompt, ask, c.samples)))
        final = await strategies.deliberate(c.strategy, prompt, ask, FINAL_REQUEST, FINAL_CUE)
        return self.Outputs(text=await ask(final))


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    return strategies.demo_values(values, skip=(MESSAGES,))
