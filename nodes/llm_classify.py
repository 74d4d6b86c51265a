"""`llm.classify`: pick one label from a fixed set, reliably even on a tiny model.

Where the model gives log-probabilities (the embedded `local/smollm2` does), the label is
not read from generated text: the node asks for the most likely first tokens of the
answer, adds up the probability of the tokens that begin each label, divides by the same
prompt's probabilities for content-free texts (contextual calibration, which removes a
small model's bias toward one label) and picks the label with the largest share; that
share is the `confidence`. Elsewhere (the scripted model, providers without logprobs) the
reply text is mapped to the nearest label and `confidence` is None.

Calls whose reply is only measured (the content-free priors, an ensemble's votes, a reply scored
by its logprobs) are made as probes (`purpose="probe"`): never streamed as if they were the
answer, and marked in the trace.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import uuid
import weakref
from collections import OrderedDict
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from nodes import strategies
from nodes.prompting import Form, chat_messages, completion_text
from nodes.strategies import Prompt, Strategy
from studio.node import Completion, Message, Node, NodeContext, Tunable

PROMPT = "Text: {{ text }}\nLabel:"
TOP_LOGPROBS = 100
"""How many alternatives per position the node asks for."""
CONTENT_FREE = ("N/A", "", "[MASK]")
"""Texts that carry no content; the prompt's answers to them measure its label bias."""
FINAL_REQUEST = "Now answer with the label only."
FINAL_CUE = "Therefore, the label is:"
CONSTRAINED_TOKENS = 32
"""Room for `{"label": "..."}` in a constrained answer."""
Method = Literal["logprobs", "constrained", "text"]
"""`logprobs`, `constrained` or `text`: how the label was chosen."""
PRIORS_KEPT = 256
"""How many content-free priors the process remembers (one per model and prompt)."""


class Priors:
    """Content-free priors by (model, prompt), shared by every run in the process.

    A prior depends only on the model and the prompt around the text, never on the run, so
    it is asked once and reused by later runs; the node instance (which lives in a cached plan
    shared by concurrent runs, each possibly bound to another model) holds no state. Two runs
    that miss at the same moment both ask: the answers are the same, so either may be kept.
    """

    def __init__(self, kept: int = PRIORS_KEPT) -> None:
        self.kept = kept
        self.known: OrderedDict[tuple[str, str], dict[str, float] | None] = OrderedDict()

    def get(self, key: tuple[str, str]) -> tuple[bool, dict[str, float] | None]:
        """Whether `key` is known, and its prior."""
        if key not in self.known:
            return False, None
        self.known.move_to_end(key)
        return True, self.known[key]

    def clear(self) -> None:
        """Forget every prior, as a fresh process would (a benchmark's searches start alike)."""
        self.known.clear()

    def put(self, key: tuple[str, str], prior: dict[str, float] | None) -> None:
        self.known[key] = prior
        self.known.move_to_end(key)
        while len(self.known) > self.kept:
            self.known.popitem(last=False)


PRIORS = Priors()


_UNNAMED: weakref.WeakKeyDictionary[object, str] = weakref.WeakKeyDictionary()


def model_identity(llm: object) -> str:
    """What a prior depends on besides the prompt: the bound model's identity where it says
    (`BoundLLM.identity`), else a token for the client object itself while it lives (a fake)."""
    identity = getattr(llm, "identity", None)
    if isinstance(identity, str):
        return identity
    try:
        return _UNNAMED.setdefault(llm, uuid.uuid4().hex)
    except TypeError:  # not weakly referable: never shared
        return uuid.uuid4().hex


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


def labels_begun_by(token: str, labels: list[str]) -> list[str]:
    """The labels a token can be the start of (case and surrounding space ignored).

    A token equal to a label belongs to that label alone.
    """
    piece = token.strip().lower()
    if not piece:
        return []
    exact = [label for label in labels if label.lower() == piece]
    return exact or [label for label in labels if label.lower().startswith(piece)]


def label_mass(top: dict[str, float], labels: list[str]) -> dict[str, float]:
    """Probability of each label at one position: its tokens' mass, shared tokens split evenly."""
    mass = dict.fromkeys(labels, 0.0)
    for token, logprob in top.items():
        owners = labels_begun_by(token, labels)
        for label in owners:
            mass[label] += math.exp(logprob) / len(owners)
    return mass


def shares(scores: dict[str, float]) -> dict[str, float]:
    """Scores scaled to sum to 1 (unchanged when they are all zero)."""
    total = sum(scores.values())
    return {label: score / total for label, score in scores.items()} if total > 0 else dict(scores)


def content_free_prior(tops: list[dict[str, float]], labels: list[str]) -> dict[str, float]:
    """The average label shares over content-free answers.

    A label missing from an answer's top tokens is given the least probability listed,
    an upper bound of its own, so that calibration never divides by zero.
    """
    prior = dict.fromkeys(labels, 0.0)
    for top in tops:
        mass = label_mass(top, labels)
        floor = math.exp(min(top.values())) if top else 1.0
        for label, share in shares({k: v or floor for k, v in mass.items()}).items():
            prior[label] += share / len(tops)
    return prior


def calibrate(scores: dict[str, float], prior: dict[str, float]) -> dict[str, float]:
    """Label shares after dividing each label's probability by its content-free prior."""
    return shares({label: score / prior[label] for label, score in scores.items()})


def first_position(completion: Completion) -> dict[str, float] | None:
    """The top tokens of the first generated position, or None when the provider gave none."""
    if not completion.top_logprobs:
        return None
    return completion.top_logprobs[0] or None


class Classify(Node):
    """Pick one label from a fixed set."""

    uses_model = True
    tunable = Tunable(
        fields=("instructions", "demos", "form", "strategy", "samples", "list_labels"),
        output="label",
        labels=True,
        default_form="completion",
        logprobs=("local/",),
    )
    starter = {"labels": ["yes", "no"]}

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        labels: list[str] = Field(min_length=2)
        """The allowed answers."""
        instructions: str = ""
        """What the model is told before the input."""
        demos: list[dict[str, str]] = []
        """Labelled examples: `text` and its `label`."""
        form: Form = "completion"
        """`completion` (best on small models) or `chat`."""
        list_labels: bool | None = None
        """Name the labels after the instructions; by default only when the prompt shows them no
        other way (chat form, or demos that leave a label out). Naming them biases a tiny model."""
        calibrate: bool = True
        """Where the model gives logprobs, divide each label's probability by the one the same prompt
        gives content-free texts (asked once per compiled node); corrects a bias toward one label."""
        strategy: Strategy = "single"
        """`single` call; `reasoning` (think, then label); `ensemble` (`samples` votes, each with the
        demos in another order); `reflect` (draft label, critique, final label)."""
        samples: int = Field(default=3, ge=1, le=15)
        """How many votes an `ensemble` takes."""

    class Inputs(BaseModel):
        text: str
        """The text to classify."""

    class Outputs(BaseModel):
        label: str
        """One of the configured labels."""
        confidence: float | None = None
        """The chosen label's share of the label probability (0-1); None when the label was read
        from the reply text because the model gave no logprobs."""
        method: str = "text"
        """How the label was chosen: `logprobs` (scored), `constrained` (an answer the provider
        constrained to the labels, for models without logprobs) or `text` (the reply's nearest label)."""

    config: Config

    def model_calls(self) -> float:
        return strategies.calls(self.config.strategy, self.config.samples)

    def setup_calls(self, model: str) -> int:
        """The content-free calibration calls, once per prompt variant, on models that give logprobs."""
        if not (self.config.calibrate and self.tunable and model.startswith(self.tunable.logprobs)):
            return 0
        ensemble = self.config.strategy == "ensemble" and len(self.config.demos) > 1
        return len(CONTENT_FREE) * (self.config.samples if ensemble else 1)

    def model_needs(self) -> list[tuple[tuple[str, ...], str]]:
        """Logprobs or a constrained answer; without either the label is read from free text."""
        return [
            (
                ("logprobs", "constrained"),
                "scores labels by logprobs or a constrained answer; without either it reads the label from "
                "free text and confidence is null",
            )
        ]

    def check(self) -> list[tuple[str, str]]:
        problems = []
        if self.config.strategy == "cascade":
            problems.append(
                ("strategy", "`strategy: cascade` is not available on llm.classify yet (llm.generate has it)")
            )
        if len(set(self.config.labels)) != len(self.config.labels):
            problems.append(("labels", "labels must be distinct"))
        for i, demo in enumerate(self.config.demos):
            if demo.get("label") not in self.config.labels:
                problems.append((f"demos.{i}.label", f"demo label {demo.get('label')!r} is not one of the labels"))
        return problems

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

    @staticmethod
    def method(ctx: NodeContext) -> Method:
        """`logprobs` where the model gives them (or cannot say), else `constrained` where the provider
        constrains answers to a JSON Schema, else `text`."""
        supports = getattr(ctx.llm, "supports", None)
        if supports is None or supports("logprobs") is not False:  # unknown: ask, and see
            return "logprobs"
        return "constrained" if supports("constrained") else "text"

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
        if self.method(ctx) == "logprobs":
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

    @staticmethod
    def scoring(ctx: NodeContext) -> dict[str, Any]:
        """Options of a call whose label is read from its logprobs, not its text: a `probe` (never
        streamed as the answer: calibration may pick another label than the text begins with) where
        the model is known to give logprobs; else none (the reply's text may be the answer)."""
        supports = getattr(ctx.llm, "supports", None)
        return {"purpose": "probe"} if supports is not None and supports("logprobs") is True else {}

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

    async def vote(self, text: str, ctx: NodeContext) -> Outputs:
        """An ensemble: label shares summed over the votes, or the majority label without logprobs."""
        n = self.config.samples
        if self.method(ctx) == "constrained":
            return await self.vote_constrained(text, ctx)
        if len(self.config.demos) < 2:  # a single prompt: the votes differ by sampling instead

            async def sample(prompt: Prompt, **options: Any) -> str:  # a vote, not the answer: a probe
                return (await self.complete(prompt, ctx, purpose="probe", **options)).text

            replies = await strategies.samples(self.prompt(text), sample, n)
            return self.Outputs(label=strategies.majority([nearest_label(r, self.config.labels) for r in replies]))
        completions = [await self.ask(text, ctx, variant, purpose="probe") for variant in range(n)]
        total = dict.fromkeys(self.config.labels, 0.0)
        for variant, reply in enumerate(completions):
            found = await self.scores(reply, ctx, variant)
            if found is None:
                labels = [nearest_label(c.text, self.config.labels) for c in completions]
                return self.Outputs(label=strategies.majority(labels))
            for label, share in found.items():
                total[label] += share / n
        label = max(self.config.labels, key=lambda name: total[name])
        return self.Outputs(label=label, confidence=round(total[label], 4), method="logprobs")

    async def vote_constrained(self, text: str, ctx: NodeContext) -> Outputs:
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
        return self.Outputs(label=strategies.majority(labels), method="constrained")

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        if self.config.strategy == "ensemble":
            return await self.vote(inputs.text, ctx)

        async def ask(prompt: Prompt, **options: Any) -> str:
            return (await self.complete(prompt, ctx, **options)).text

        prompt = await strategies.deliberate(
            self.config.strategy, self.prompt(inputs.text), ask, FINAL_REQUEST, FINAL_CUE
        )
        if self.method(ctx) == "constrained":
            reply = await self.complete_constrained(prompt, ctx)
            return self.Outputs(label=self.read_label(reply), method="constrained")
        reply = await self.complete(prompt, ctx, **self.scoring(ctx))
        scores = await self.scores(reply, ctx)
        if scores is None:
            return self.Outputs(label=nearest_label(reply.text, self.config.labels), method="text")
        label = max(self.config.labels, key=lambda name: scores[name])
        return self.Outputs(label=label, confidence=round(scores[label], 4), method="logprobs")
