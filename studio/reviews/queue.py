"""Which runs need a review: the rules of the review queue.

A run needs one when it has none yet and it failed, a step reported a low `confidence`, samples of
a step disagreed (`agreement` below 1), or it falls in the random share of the rest (chosen by its
id, so the same run is always in or out).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol

from studio.store.base import RunFilter, RunRecord, StepRecord

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


ANY_RULE = "any rule"
"""The queue's default: runs that some rule puts in it."""
EVERY_RUN = "all unreviewed"
"""No rule: every unreviewed run that the filter keeps."""
RULES = [ANY_RULE, "failed", "low confidence", "samples disagree", "random sample", EVERY_RUN]
"""What the queue can be narrowed to: a rule's reason begins with its name."""
SCAN = 500
"""How many of the newest runs matching a filter the queue looks at."""


@dataclass(frozen=True)
class QueueItem:
    """A run waiting for a review, and why it waits."""

    run: RunRecord
    """The run."""
    reason: str
    """What put it in the queue (`why_review`'s words, or `unreviewed` under `EVERY_RUN`)."""


class QueueStore(Protocol):
    """What the queue reads from a store: runs, their steps, which have feedback."""

    def query_runs(self, where: RunFilter | None = None, *, offset: int = 0, limit: int = 50) -> list[RunRecord]:
        """The newest runs `where` keeps."""
        ...

    def steps(self, run_id: str) -> list[StepRecord]:
        """A run's steps."""
        ...

    def reviewed(self, run_ids: list[str]) -> set[str]:
        """Which of these runs have feedback."""
        ...


def review_queue(
    store: QueueStore, where: RunFilter, *, rule: str = ANY_RULE, scan: int = SCAN, share: float = RANDOM_SHARE
) -> list[QueueItem]:
    """The unreviewed, finished runs matching `where` that `rule` keeps, newest first.

    Runs of experiments (batches, optimizer searches) are not production runs and stay out."""
    if rule not in RULES:
        raise ValueError(f"no queue rule {rule!r}; rules: {RULES}")
    runs = [r for r in store.query_runs(where, limit=scan) if r.status != "running" and r.experiment_id is None]
    done = store.reviewed([r.run_id for r in runs])
    items = []
    for run in runs:
        if run.run_id in done:
            continue
        reason = why_review(run, [] if run.status == "failed" else store.steps(run.run_id), share=share)
        if rule == EVERY_RUN:
            items.append(QueueItem(run, reason or "unreviewed"))
        elif reason is not None and (rule == ANY_RULE or reason.startswith(rule)):
            items.append(QueueItem(run, reason))
    return items
