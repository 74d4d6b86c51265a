"""Two batches example by example: which examples B wins, loses or ties against A, and whether
the difference is more than chance (an exact sign test, and a bootstrap interval of the mean).

Runs do not record their dataset row, so examples are matched by their flow inputs (repeated
inputs in turn, in run order), the way `batch --resume` matches finished runs. A batch's examples
are its scored runs (`summary["scores"]`); a failed run is scored 0 there, as the batch summary
scores it, so it counts as 0 here too. Pure functions over stored records; the page draws them.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from typing import Any, Literal

from studio.store.base import ExperimentRecord, RunRecord
from studio.viewer.lists import MISSING, short
from studio.viewer.results import expected_by_inputs, shown_value

Outcome = Literal["loss", "win", "tie", "only A", "only B"]
OUTCOMES: tuple[Outcome, ...] = ("loss", "win", "tie", "only A", "only B")
"""The outcomes in the table's order: losses first."""
TIE_TOLERANCE = 1e-9
"""Scores closer than this are a tie."""
BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 0
SIGNIFICANCE = 0.05


@dataclass(frozen=True)
class Pair:
    """One example as batch A and batch B saw it (None where a batch has no such example)."""

    inputs: dict[str, Any]
    """The example's flow inputs."""
    expected: dict[str, Any] | None
    """Its expected outputs, from either batch's dataset; None when unknown."""
    a: RunRecord | None
    b: RunRecord | None
    score_a: float | None
    score_b: float | None

    @property
    def outcome(self) -> Outcome:
        """B against A: `win` when B scored higher, `loss` when lower, else `tie`."""
        if self.score_a is None:
            return "only B"
        if self.score_b is None:
            return "only A"
        if abs(self.score_b - self.score_a) <= TIE_TOLERANCE:
            return "tie"
        return "win" if self.score_b > self.score_a else "loss"


@dataclass(frozen=True)
class Comparison:
    """Every example of two batches, paired, with the totals and the paired tests."""

    pairs: list[Pair]
    """In A's run order, then the examples only B has."""

    def count(self, outcome: Outcome) -> int:
        """How many examples have this outcome."""
        return sum(p.outcome == outcome for p in self.pairs)

    @property
    def differences(self) -> list[float]:
        """B's score minus A's on each example both batches scored, ties included."""
        return [p.score_b - p.score_a for p in self.pairs if p.score_a is not None and p.score_b is not None]

    @property
    def mean_difference(self) -> float | None:
        """The mean of `differences`; None when no example is shared."""
        d = self.differences
        return sum(d) / len(d) if d else None

    @property
    def p_value(self) -> float:
        """Exact two-sided sign test over the wins and losses (ties left out)."""
        return sign_test(self.count("win"), self.count("loss"))

    def bootstrap_ci(self, samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED) -> tuple[float, float] | None:
        """95% paired bootstrap interval of the mean difference (fixed seed: the same every time)."""
        return bootstrap_ci(self.differences, samples=samples, seed=seed)


def sign_test(wins: int, losses: int) -> float:
    """Two-sided p-value of `wins` against `losses` when each is a fair coin: twice the smaller
    binomial tail, at most 1; 1 when there is nothing to test."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1))
    return min(1.0, 2.0 * tail / (1 << n))


def bootstrap_ci(
    differences: list[float], *, samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float] | None:
    """The 2.5th and 97.5th percentiles of the mean over `samples` resamples; None for no data."""
    n = len(differences)
    if n == 0:
        return None
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(differences, k=n)) / n for _ in range(samples))
    return (means[int(0.025 * (samples - 1))], means[int(0.975 * (samples - 1))])


def _key(inputs: dict[str, Any]) -> str:
    return json.dumps(inputs, sort_keys=True, ensure_ascii=False, default=str)


def scored_runs(experiment: ExperimentRecord, runs: list[RunRecord]) -> list[tuple[RunRecord, float]]:
    """The runs the batch scored (`summary["scores"]`, failed runs at 0), with their scores, in run order."""
    scores = (experiment.summary or {}).get("scores")
    if not isinstance(scores, dict):
        return []
    found = []
    for run in runs:
        score = scores.get(run.run_id)
        if isinstance(score, int | float) and not isinstance(score, bool):
            found.append((run, float(score)))
    return found


def compare_batches(
    a: ExperimentRecord, runs_a: list[RunRecord], b: ExperimentRecord, runs_b: list[RunRecord]
) -> Comparison:
    """Pair A's and B's scored runs by their flow inputs (repeated inputs in turn)."""
    waiting: dict[str, list[tuple[RunRecord, float]]] = {}
    for run, score in scored_runs(b, runs_b):
        waiting.setdefault(_key(run.inputs), []).append((run, score))
    expected = _expected(a, b)
    pairs = []
    for run, score in scored_runs(a, runs_a):
        key = _key(run.inputs)
        match = waiting.get(key)
        other, other_score = match.pop(0) if match else (None, None)
        pairs.append(Pair(run.inputs, _pop(expected, key), run, other, score, other_score))
    for key, left in waiting.items():
        for run, score in left:
            pairs.append(Pair(run.inputs, _pop(expected, key), None, run, None, score))
    return Comparison(pairs)


def _expected(a: ExperimentRecord, b: ExperimentRecord) -> dict[str, list[Any]]:
    """Expected outputs by inputs from A's dataset, then from B's for inputs A's does not have."""
    found = expected_by_inputs(a.config)
    for key, values in expected_by_inputs(b.config).items():
        found.setdefault(key, values)
    return found


def _pop(expected: dict[str, list[Any]], key: str) -> dict[str, Any] | None:
    values = expected.get(key)
    return values.pop(0) if values else None


def _got(run: RunRecord | None) -> str:
    if run is None:
        return MISSING
    if run.status != "succeeded":
        return f"{run.status}: {short(run.error, 60)}" if run.error else run.status
    return shown_value(run.outputs)


def comparison_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """The table: example, expected, A got, B got, score A, score B, outcome; losses first, then
    wins, ties and the examples only one batch has (each group in run order)."""
    rows = [
        {
            "example": shown_value(p.inputs),
            "expected": shown_value(p.expected),
            "A got": _got(p.a),
            "B got": _got(p.b),
            "score A": p.score_a,
            "score B": p.score_b,
            "outcome": p.outcome,
            "run A": p.a.run_id if p.a else None,
            "run B": p.b.run_id if p.b else None,
        }
        for p in comparison.pairs
    ]
    return sorted(rows, key=lambda row: OUTCOMES.index(row["outcome"]))


def headline(comparison: Comparison) -> str:
    """`B against A: 3 wins, 1 loss, 2 ties · mean Δ +0.250 (95% CI …) · sign test p = 0.625`."""
    wins, losses, ties = comparison.count("win"), comparison.count("loss"), comparison.count("tie")
    parts = [f"B against A: {_plural(wins, 'win')}, {_plural(losses, 'loss')}, {_plural(ties, 'tie')}"]
    mean = comparison.mean_difference
    if mean is not None:
        ci = comparison.bootstrap_ci()
        interval = f" (95% CI {ci[0]:+.3f} to {ci[1]:+.3f})" if ci else ""
        parts.append(f"mean Δ {mean:+.3f}{interval}")
    parts.append(f"sign test p = {_p(comparison.p_value)}")
    only = [f"{comparison.count(o)} {o}" for o in ("only A", "only B") if comparison.count(o)]
    if only:
        parts.append(", ".join(only) + " (not tested)")
    return " · ".join(parts)


def reading(comparison: Comparison, significance: float = SIGNIFICANCE) -> str:
    """The headline in plain words."""
    wins, losses = comparison.count("win"), comparison.count("loss")
    if not comparison.differences:
        return "The two batches share no scored example: nothing to compare."
    if wins + losses == 0:
        return "Every shared example scored the same in both batches: no difference."
    level = f"{significance:.0%}"
    if comparison.p_value < significance:
        better = "better" if wins > losses else "worse"
        return f"B is significantly {better} than A at {level} (sign test over the examples that differ)."
    text = f"No significant difference at {level}"
    if sign_test(wins + losses, 0) >= significance:
        return f"{text}: only {wins + losses} examples differ, too few for the sign test to show one."
    return f"{text}: B wins {wins} and loses {losses} of the {wins + losses} examples that differ."


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}es" if word.endswith("s") else f"{n} {word}s"


def _p(p: float) -> str:
    return f"{p:.4g}" if p >= 0.0001 else f"{p:.1e}"
