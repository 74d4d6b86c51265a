"""Which runs need a review: the rules of the review queue.

A run needs one when it has none yet and it failed, a step reported a low `confidence`, samples of
a step disagreed (`agreement` below 1), or it falls in the random share of the rest (chosen by its
id, so the same run is always in or out).
"""

from __future__ import annotations

import hashlib

from studio.store.base import RunRecord, StepRecord

LOW_CONFIDENCE = 0.6
"""A step whose `confidence` output is below this asks for a review."""
RANDOM_SHARE = 0.1
"""The share of the other runs sampled for review."""


def why_review(run: RunRecord, steps: list[StepRecord], *, share: float = RANDOM_SHARE) -> str | None:
    """Why an unreviewed run belongs in the queue, or None when it does not."""
    if run.status == "failed":
        return "failed"
    for step in steps:
        outputs = step.outputs or {}
        confidence, agreement = outputs.get("confidence"), outputs.get("agreement")
        if isinstance(confidence, int | float) and confidence < LOW_CONFIDENCE:
            return f"low confidence at {step.node} ({confidence:.2f})"
        if isinstance(agreement, int | float) and agreement < 1:
            return f"samples disagree at {step.node}"
    if run.status == "succeeded" and _fraction(run.run_id) < share:
        return "random sample"
    return None


def _fraction(run_id: str) -> float:
    return int(hashlib.sha256(run_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
