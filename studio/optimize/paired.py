"""Paired comparison of a challenger with the best on the same examples.

A change replaces the best only by a margin the examples can resolve: more than one example's
worth of score (a one-example win is a tie, broken on held-out train examples). Its confidence
is a one-sided sign test over the examples where the two differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

MARGIN = 1.0
"""A challenger must beat the best by more than this much summed score (one example's worth)."""


@dataclass(frozen=True)
class Comparison:
    """A challenger against the best, example by example."""

    wins: int
    losses: int
    ties: int
    margin: float
    """Summed score difference (challenger minus best)."""

    @property
    def confidence(self) -> float:
        """1 minus the one-sided sign-test p-value that the challenger is no better (0.5 with no evidence)."""
        n = self.wins + self.losses
        if n == 0:
            return 0.5
        p = sum(comb(n, k) for k in range(self.wins, n + 1)) / 2**n
        return float(1.0 - p)

    @property
    def resolved_win(self) -> bool:
        """Whether the challenger wins by more than one example's worth."""
        return self.margin > MARGIN + 1e-9

    @property
    def at_least_tie(self) -> bool:
        """Whether it is not worse: a tie, or a win too small to count as one."""
        return self.margin >= -1e-9

    @property
    def holds(self) -> bool:
        """Whether it loses by at most one example's worth: on a race's early rung that is a tie
        too (the margin rule both ways), so one unlucky example does not knock it out."""
        return self.margin >= -MARGIN - 1e-9

    def as_json(self) -> dict[str, float | int]:
        """The report's numbers."""
        return {
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "margin": round(self.margin, 6),
            "confidence": round(self.confidence, 4),
        }


def compare(challenger: dict[int, float], best: dict[int, float], indices: list[int]) -> Comparison:
    """Compare two candidates' scores on `indices` (both must be evaluated there)."""
    diffs = [challenger[i] - best[i] for i in indices]
    wins = sum(d > 1e-9 for d in diffs)
    losses = sum(d < -1e-9 for d in diffs)
    return Comparison(wins, losses, len(diffs) - wins - losses, sum(diffs))
