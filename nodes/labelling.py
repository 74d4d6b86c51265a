"""How `llm.classify` asks a model for one label: the prompt, the call (with the first tokens'
logprobs where the model gives them, or an answer the provider constrains to the labels), the
reading of the reply, and an ensemble's votes."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from nodes import strategies
from nodes.calibration import (
    CONTENT_FREE,
    PRIORS,
    calibrate,
    content_free_prior,
    first_position,
    label_mass,
    model_identity,
    shares,
)
from nodes.prompting import Form, chat_messages, completion_text
from nodes.strategies import Prompt
from studio.node import Completion, Message, NodeContext, model_supports

PROMPT = "Text: {{ text }}\nLabel:"
TOP_LOGPROBS = 100
"""How many alternatives per position the node asks for."""
CONSTRAINED_TOKENS = 32
"""Room for `{"label": "..."}` in a constrained answer."""
Method = Literal["logprobs", "constrained", "text"]
"""`logprobs`, `constrained` or `text`: how the label was chosen."""


class Settings(Protocol):
    """The classifier's config fields read here (`llm.classify`'s Config)."""

    labels: list[str]
    instructions: str
    demos: list[dict[str, str]]
    form: Form
    list_labels: bool | None
    calibrate: bool
    samples: int


@dataclass(frozen=True)
class Choice:
    """The label picked, its share where scored, and how it was picked."""

    label: str
    confidence: float | None = None
    method: Method = "text"


def nearest_label(reply: str, labels: list[str]) -> str:
    """The label a free-text reply means: exact, then first word, then contained, then closest.

    An empty reply means the first label.
    """
    words = re.findall(r"[a-z0-9_\-]+", reply.lower())
    lowered = {label.lower(): label for label in labels}
    text = " ".join(words)
    if text in lowered:
        return lowered[text]
    if words and words[0] in lowered:
        return lowered[words[0]]
    contained = [label for key, label in lowered.items() if re.search(rf"\b{re.escape(key)}\b", text)]
    if contained:
        return contained[0]
    if not words:
        return labels[0]
    close = difflib.get_close_matches(words[0], list(lowered), n=1, cutoff=0.0)
    return lowered[close[0]] if close else labels[0]


def method(ctx: NodeContext) -> Method:
    """`logprobs` where the model gives them (or cannot say), else `constrained` where the provider
    constrains answers to a JSON Schema, else `text`."""
    if model_supports(ctx.llm, "logprobs") is not False:  # unknown: ask, and see
        return "logprobs"
    return "constrained" if model_supports(ctx.llm, "constrained") else "text"


def scoring(ctx: NodeContext) -> dict[str, Any]:
    """Options of a call whose label is read from its logprobs, not its text: a `probe` (never
    streamed as the answer: calibration may pick another label than the text begins with) where
    the model is known to give logprobs; else none (the reply's text may be the answer)."""
    return {"purpose": "probe"} if model_supports(ctx.llm, "logprobs") is True else {}


@dataclass(frozen=True)
class Labeller:
    """Asks for one of `config.labels`; holds nothing but the config (the node is shared by runs)."""

    config: Settings

    def names_labels(self) -> bool:
        """Whether the preamble lists the labels (see `list_labels`)."""
        if self.config.list_labels is not None:
            return self.config.list_labels
        shown = {demo.get("label") for demo in self.config.demos}
        return self.config.form == "chat" or not set(self.config.labels) <= shown

    def preamble(self) -> str:
        """Instructions, then the label list where `names_labels` says so."""
        if not self.names_labels():
            return self.config.instructions.strip()
        labels = ", ".join(self.config.labels)
        return f"{self.config.instructions}\nAnswer with one label from: {labels}.".strip()

    def demos(self, variant: int = 0) -> list[dict[str, object]]:
        """The demos, rotated by `variant` places (an ensemble's votes see them in different orders)."""
        demos: list[dict[str, object]] = [dict(d) for d in self.config.demos]
        shift = variant % len(demos) if demos else 0
        return demos[shift:] + demos[:shift]

    def prompt(self, text: str, variant: int = 0) -> Prompt:
        """The prompt that asks for `text`'s label."""
        values = {"text": text}
        if self.config.form == "completion":
            return Prompt(text=completion_text(self.preamble(), PROMPT, self.demos(variant), "label", values))
        return Prompt(
            messages=tuple(chat_messages(self.preamble(), "{{ text }}", self.demos(variant), "label", values))
        )

    def response_format(self) -> dict[str, Any]:
        """A JSON Schema answer whose only field is one of the labels."""
        label = {"type": "string", "enum": list(self.config.labels)}
        schema = {
            "type": "object",
            "properties": {"label": label},
            "required": ["label"],
            "additionalProperties": False,
        }
        return {"type": "json_schema", "json_schema": {"name": "label", "schema": schema, "strict": True}}

    async def complete_constrained(self, prompt: Prompt, ctx: NodeContext, **options: Any) -> Completion:
        """One chat call whose answer the provider constrains to `{"label": LABEL}`."""
        messages = prompt.messages or (Message("user", prompt.text or ""),)
        options["extra"] = {**options.get("extra", {}), "response_format": self.response_format()}
        options.setdefault("max_tokens", CONSTRAINED_TOKENS)
        return await ctx.llm.complete(messages=list(messages), **options)

    def read_label(self, reply: Completion) -> str:
        """The label of a constrained answer; the nearest label when the provider did not keep to it."""
        start = reply.text.find("{")
        try:
            data = json.JSONDecoder().raw_decode(reply.text[start:])[0] if start >= 0 else None
        except json.JSONDecodeError:
            data = None
        label = data.get("label") if isinstance(data, dict) else None
        return label if label in self.config.labels else nearest_label(reply.text, self.config.labels)

    async def complete(self, prompt: Prompt, ctx: NodeContext, **options: Any) -> Completion:
        """One model call asking for a label, with the first tokens' logprobs where the client can."""
        options.setdefault("extra", {})
        if method(ctx) == "logprobs":
            options["extra"] = {"top_logprobs": TOP_LOGPROBS, **options["extra"]}
        if prompt.text is not None:
            options.setdefault("stop", ["\n"])
            options.setdefault("max_tokens", 8)
        else:
            options.setdefault("max_tokens", 16)
        return await ctx.llm.complete(**prompt.request(), **options)

    async def ask(self, text: str, ctx: NodeContext, variant: int = 0, **options: Any) -> Completion:
        """One model call for `text`, asking for the first tokens' logprobs where the client can."""
        return await self.complete(self.prompt(text, variant), ctx, **options)

    async def prior(self, ctx: NodeContext, variant: int = 0) -> dict[str, float] | None:
        """The prompt's label shares for content-free texts, asked once per model and prompt in
        the process (`PRIORS`); None without logprobs."""
        key = (model_identity(ctx.llm), repr((self.prompt(CONTENT_FREE[0], variant), self.config.labels)))
        known, prior = PRIORS.get(key)
        if known:
            return prior
        tops = [first_position(await self.ask(text, ctx, variant, purpose="probe")) for text in CONTENT_FREE]
        found = [top for top in tops if top is not None]
        prior = content_free_prior(found, self.config.labels) if len(found) == len(tops) else None
        PRIORS.put(key, prior)
        return prior

    async def scores(self, reply: Completion, ctx: NodeContext, variant: int = 0) -> dict[str, float] | None:
        """Each label's (calibrated) share from the reply's logprobs; None when it has none."""
        top = first_position(reply)
        scores = shares(label_mass(top, self.config.labels)) if top is not None else {}
        if not any(scores.values()):
            return None
        prior = await self.prior(ctx, variant) if self.config.calibrate else None
        return calibrate(scores, prior) if prior is not None else scores

    async def choose(self, prompt: Prompt, ctx: NodeContext, **options: Any) -> Choice:
        """The label for `prompt`: constrained where the provider constrains answers, else scored by
        logprobs where the model gives them, else the reply's nearest label."""
        if method(ctx) == "constrained":
            return Choice(
                self.read_label(await self.complete_constrained(prompt, ctx, **options)), method="constrained"
            )
        reply = await self.complete(prompt, ctx, **scoring(ctx), **options)
        scores = await self.scores(reply, ctx)
        if scores is None:
            return Choice(nearest_label(reply.text, self.config.labels))
        label = max(self.config.labels, key=lambda name: scores[name])
        return Choice(label, round(scores[label], 4), "logprobs")

    async def vote(self, text: str, ctx: NodeContext) -> Choice:
        """An ensemble: label shares summed over the votes, or the majority label without logprobs."""
        n = self.config.samples
        if method(ctx) == "constrained":
            return await self.vote_constrained(text, ctx)
        if len(self.config.demos) < 2:  # a single prompt: the votes differ by sampling instead

            async def sample(prompt: Prompt, **options: Any) -> str:  # a vote, not the answer: a probe
                return (await self.complete(prompt, ctx, purpose="probe", **options)).text

            replies = await strategies.samples(self.prompt(text), sample, n)
            return Choice(strategies.majority([nearest_label(r, self.config.labels) for r in replies]))
        completions = [await self.ask(text, ctx, variant, purpose="probe") for variant in range(n)]
        total = dict.fromkeys(self.config.labels, 0.0)
        for variant, reply in enumerate(completions):
            found = await self.scores(reply, ctx, variant)
            if found is None:
                return Choice(strategies.majority([nearest_label(c.text, self.config.labels) for c in completions]))
            for label, share in found.items():
                total[label] += share / n
        label = max(self.config.labels, key=lambda name: total[name])
        return Choice(label, round(total[label], 4), "logprobs")

    async def vote_constrained(self, text: str, ctx: NodeContext) -> Choice:
        """An ensemble of constrained answers: each vote sees the demos in another order (or another
        seed, with fewer than two demos); the majority label wins."""
        n, sampled = self.config.samples, len(self.config.demos) < 2
        labels = []
        for variant in range(n):
            options: dict[str, Any] = (
                {"temperature": strategies.SAMPLE_TEMPERATURE, "extra": {"seed": variant}} if sampled else {}
            )
            prompt = self.prompt(text, 0 if sampled else variant)
            labels.append(self.read_label(await self.complete_constrained(prompt, ctx, purpose="probe", **options)))
        return Choice(strategies.majority(labels), method="constrained")
