"""`llm.classify`: pick one label from a fixed set, reliably even on a tiny model.

Where the model gives log-probabilities (the embedded `local/smollm2` does), the label is
not read from generated text: the node asks for the most likely first tokens of the
answer, adds up the probability of the tokens that begin each label, divides by the same
prompt's probabilities for content-free texts (contextual calibration, which removes a
small model's bias toward one label) and picks the label with the largest share; that
share is the `confidence`. Elsewhere (the scripted model, providers without logprobs) the
reply text is mapped to the nearest label and `confidence` is None.
"""

from __future__ import annotations

import difflib
import inspect
import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nodes.prompting import Form, chat_messages, completion_text
from studio.node import Completion, Node, NodeContext

PROMPT = "Text: {{ text }}\nLabel:"
TOP_LOGPROBS = 50
"""How many alternatives per position the node asks for."""
CONTENT_FREE = ("N/A", "", "[MASK]")
"""Texts that carry no content; the prompt's answers to them measure its label bias."""


def nearest_label(reply: str, labels: list[str]) -> str:
    """The label a free-text reply means: exact, then first word, then contained, then closest."""
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
    first = words[0] if words else ""
    close = difflib.get_close_matches(first, list(lowered), n=1, cutoff=0.0)
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


def accepts_extra(llm: object) -> bool:
    """Whether `llm.complete` takes provider options (`extra=`), which carry the logprobs request."""
    try:
        parameters = inspect.signature(llm.complete).parameters  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return False
    return "extra" in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


class Classify(Node):
    """Pick one label from a fixed set."""

    uses_model = True

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

    class Inputs(BaseModel):
        text: str
        """The text to classify."""

    class Outputs(BaseModel):
        label: str
        """One of the configured labels."""
        confidence: float | None = None
        """The chosen label's share of the label probability (0-1); None when the label was read
        from the reply text because the model gave no logprobs."""

    config: Config

    def __init__(self, config: BaseModel) -> None:
        super().__init__(config)
        self._prior: dict[str, float] | None = None

    def check(self) -> list[tuple[str, str]]:
        problems = []
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

    async def ask(self, text: str, ctx: NodeContext) -> Completion:
        """One model call for `text`, asking for the first tokens' logprobs where the client can."""
        values = {"text": text}
        demos: list[dict[str, object]] = [dict(d) for d in self.config.demos]
        options: dict[str, Any] = {}
        if accepts_extra(ctx.llm):
            options["extra"] = {"top_logprobs": TOP_LOGPROBS}
        llm: Any = ctx.llm
        if self.config.form == "completion":
            prompt = completion_text(self.preamble(), PROMPT, demos, "label", values)
            reply: Completion = await llm.complete(prompt=prompt, stop=["\n"], max_tokens=8, **options)
        else:
            messages = chat_messages(self.preamble(), "{{ text }}", demos, "label", values)
            reply = await llm.complete(messages=messages, max_tokens=16, **options)
        return reply

    async def prior(self, ctx: NodeContext) -> dict[str, float] | None:
        """The prompt's label shares for content-free texts, asked once; None without logprobs."""
        if self._prior is None:
            tops = [first_position(await self.ask(text, ctx)) for text in CONTENT_FREE]
            if any(top is None for top in tops):
                return None
            self._prior = content_free_prior([top for top in tops if top is not None], self.config.labels)
        return self._prior

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        reply = await self.ask(inputs.text, ctx)
        top = first_position(reply)
        scores = shares(label_mass(top, self.config.labels)) if top is not None else {}
        if not any(scores.values()):
            return self.Outputs(label=nearest_label(reply.text, self.config.labels))
        prior = await self.prior(ctx) if self.config.calibrate else None
        if prior is not None:
            scores = calibrate(scores, prior)
        label = max(self.config.labels, key=lambda name: scores[name])
        return self.Outputs(label=label, confidence=round(scores[label], 4))
