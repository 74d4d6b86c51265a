"""Contextual calibration of a label's probability (Zhao et al., 2021): label shares from the first
answer position's logprobs, divided by the shares the same prompt gives content-free texts.

A prior depends only on the model and the prompt around the text, never on the run, so the
priors are kept by (model, prompt) for the whole process (`PRIORS`).
"""

from __future__ import annotations

import math
import uuid
import weakref
from collections import OrderedDict

from studio.node import Completion

CONTENT_FREE = ("N/A", "", "[MASK]")
"""Texts that carry no content; the prompt's answers to them measure its label bias."""
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
