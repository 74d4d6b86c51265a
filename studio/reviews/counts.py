"""How far a flow's reviews have come: reviewed runs, good, bad, corrected (Home shows them)."""

from __future__ import annotations

from dataclasses import dataclass

from studio.store.feedback import FeedbackRecord, FeedbackStore


@dataclass(frozen=True)
class ReviewCounts:
    """A flow's reviewed runs, each counted by its newest review."""

    reviewed: int = 0
    """Runs with at least one review."""
    good: int = 0
    """Runs whose newest review says good (a score of 0.5 or more)."""
    bad: int = 0
    """Runs whose newest review says bad (a score below 0.5)."""
    corrected: int = 0
    """Runs whose newest review gives corrected outputs."""


def review_counts(store: FeedbackStore, flow: str) -> ReviewCounts:
    """The counts of one flow's reviews."""
    newest: dict[str, FeedbackRecord] = {}
    for record in store.feedback_of_flow(flow):
        newest[record.run_id] = record  # oldest first: the last one stays
    records = list(newest.values())
    return ReviewCounts(
        reviewed=len(records),
        good=sum(1 for r in records if r.good is True),
        bad=sum(1 for r in records if r.good is False),
        corrected=sum(1 for r in records if r.correction),
    )
