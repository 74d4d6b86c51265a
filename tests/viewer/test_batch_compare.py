"""Comparing two batches example by example: pairing, outcomes, the sign test and the bootstrap."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from studio.store.base import ExperimentRecord, RunRecord
from studio.viewer.batch_compare import (
    bootstrap_ci,
    compare_batches,
    comparison_rows,
    headline,
    reading,
    sign_test,
)

Example = tuple[str, float | None, str]
"""(question, score or None when the batch has no such example, status)."""


def _batch(
    name: str, examples: list[tuple[str, float, str]], config: dict[str, Any] | None = None
) -> tuple[ExperimentRecord, list[RunRecord]]:
    runs, scores = [], {}
    for n, (question, score, status) in enumerate(examples):
        run_id = f"{name}-{n}"
        outputs = {"answer": f"{name} says {question}"} if status == "succeeded" else None
        error = "auth: no key" if status == "failed" else None
        runs.append(RunRecord(run_id, "qa", None, "h", {"question": question}, status, outputs, error))  # type: ignore[arg-type]
        scores[run_id] = score
    summary = {"status": "finished", "scores": scores}
    return ExperimentRecord(name, "batch", "qa", config=config or {}, summary=summary), runs


def _compare(a: list[tuple[str, float, str]], b: list[tuple[str, float, str]]) -> Any:
    return compare_batches(*_batch("A", a), *_batch("B", b))


def _ok(questions: str, score: float) -> list[tuple[str, float, str]]:
    return [(q, score, "succeeded") for q in questions]


SCENARIOS = [
    # (name, A's examples, B's examples, wins, losses, ties, only A, only B, mean Δ, p)
    ("8 wins 1 loss", _ok("abcdefgh", 0.0) + _ok("i", 1.0), _ok("abcdefgh", 1.0) + _ok("i", 0.0), 8, 1, 0, 0, 0, 7 / 9, 0.0390625),
    ("ties are left out of the test", _ok("abcdefgh", 0.0) + _ok("i", 1.0) + _ok("xyz", 1.0),
     _ok("abcdefgh", 1.0) + _ok("i", 0.0) + _ok("xyz", 1.0), 8, 1, 3, 0, 0, 7 / 12, 0.0390625),
    ("all ties", _ok("abc", 0.5), _ok("abc", 0.5), 0, 0, 3, 0, 0, 0.0, 1.0),
    ("examples only in one batch are not tested", _ok("ab", 0.0) + _ok("p", 1.0), _ok("ab", 1.0) + _ok("q", 0.0),
     2, 0, 0, 1, 1, 1.0, 0.5),
    ("a failed run counts as its summary's 0", [("a", 0.0, "failed"), ("b", 1.0, "succeeded")],
     _ok("ab", 1.0), 1, 0, 1, 0, 0, 0.5, 1.0),
    ("partial scores", _ok("ab", 0.25), [("a", 0.75, "succeeded"), ("b", 0.25, "succeeded")], 1, 0, 1, 0, 0, 0.25, 1.0),
    ("one loss of five", _ok("abcde", 1.0), _ok("abcd", 1.0) + _ok("e", 0.0), 0, 1, 4, 0, 0, -0.2, 1.0),
    ("6 losses", _ok("abcdef", 1.0), _ok("abcdef", 0.0), 0, 6, 0, 0, 0, -1.0, 0.03125),
]  # fmt: skip


@pytest.mark.parametrize(
    ("a", "b", "wins", "losses", "ties", "only_a", "only_b", "mean", "p"),
    [s[1:] for s in SCENARIOS],
    ids=[s[0] for s in SCENARIOS],
)
def test_outcomes_totals_and_sign_test(
    a: list[tuple[str, float, str]], b: list[tuple[str, float, str]],
    wins: int, losses: int, ties: int, only_a: int, only_b: int, mean: float, p: float,
) -> None:  # fmt: skip
    c = _compare(a, b)
    counts = [c.count(o) for o in ("win", "loss", "tie", "only A", "only B")]
    assert counts == [wins, losses, ties, only_a, only_b]
    assert c.mean_difference == pytest.approx(mean)
    assert c.p_value == pytest.approx(p, abs=1e-12)


@pytest.mark.parametrize(
    ("wins", "losses", "p"),
    [(8, 1, 0.0390625), (1, 8, 0.0390625), (5, 0, 0.0625), (6, 0, 0.03125), (3, 3, 1.0), (0, 0, 1.0),
     (10, 2, 2 * (1 + 12 + 66) / 4096), (1, 0, 1.0)],
)  # fmt: skip
def test_sign_test_matches_the_binomial(wins: int, losses: int, p: float) -> None:
    assert sign_test(wins, losses) == pytest.approx(p, abs=1e-15)
    n = wins + losses
    brute = sum(math.comb(n, k) for k in range(n + 1) if math.comb(n, k) <= math.comb(n, wins)) / 2**n if n else 1.0
    assert sign_test(wins, losses) == pytest.approx(min(1.0, brute))  # the two-sided tail, counted another way


def test_bootstrap_is_repeatable_and_brackets_the_mean() -> None:
    differences = [1.0] * 8 + [-1.0] + [0.0] * 3
    low, high = bootstrap_ci(differences)  # type: ignore[misc]
    assert (low, high) == bootstrap_ci(differences)  # fixed seed
    assert low < sum(differences) / len(differences) < high and low > -1 and high <= 1
    assert bootstrap_ci([0.5, 0.5]) == (0.5, 0.5)
    assert bootstrap_ci([]) is None


def test_repeated_inputs_pair_in_turn_and_rows_put_losses_first() -> None:
    a, runs_a = _batch(
        "A", [("a", 1.0, "succeeded"), ("a", 0.0, "succeeded"), ("b", 1.0, "succeeded"), ("c", 0.0, "failed")]
    )
    b, runs_b = _batch(
        "B", [("a", 1.0, "succeeded"), ("a", 1.0, "succeeded"), ("b", 0.0, "succeeded"), ("d", 1.0, "succeeded")]
    )
    rows = comparison_rows(compare_batches(a, runs_a, b, runs_b))
    assert [(r["example"], r["outcome"]) for r in rows] == [
        ("b", "loss"), ("a", "win"), ("a", "tie"), ("c", "only A"), ("d", "only B")
    ]  # fmt: skip
    assert rows[1]["run A"] == "A-1" and rows[1]["run B"] == "B-1"  # the second "a" of each, in turn
    only_a = rows[3]
    assert (only_a["A got"], only_a["B got"], only_a["score B"]) == ("failed: auth: no key", "—", None)
    assert rows[0]["B got"] == "B says b" and rows[0]["expected"] == "—"


def test_expected_comes_from_the_dataset(tmp_path: Path) -> None:
    data = tmp_path / "qa.jsonl"
    data.write_text("".join(json.dumps({"q": q, "answer": q.upper()}) + "\n" for q in "ab"), encoding="utf-8")
    config = {"data": str(data), "inputs": {"question": "q"}, "expected": {"answer": "answer"}}
    a, runs_a = _batch("A", _ok("ab", 1.0), config)
    b, runs_b = _batch("B", _ok("ab", 0.0), config)
    rows = comparison_rows(compare_batches(a, runs_a, b, runs_b))
    assert sorted(r["expected"] for r in rows) == ["A", "B"]


def test_headline_and_reading_in_words() -> None:
    c = _compare(
        _ok("abcdefgh", 0.0) + _ok("i", 1.0) + _ok("z", 1.0), _ok("abcdefgh", 1.0) + _ok("i", 0.0) + _ok("z", 1.0)
    )
    text = headline(c)
    assert text.startswith("B against A: 8 wins, 1 loss, 1 tie · mean Δ +0.700 (95% CI ")
    assert text.endswith("sign test p = 0.03906")
    assert reading(c).startswith("B is significantly better than A at 5%")
    worse = _compare(_ok("abcdef", 1.0), _ok("abcdef", 0.0))
    assert reading(worse).startswith("B is significantly worse than A at 5%")
    few = _compare(_ok("abc", 0.0), _ok("abc", 1.0))
    assert (
        reading(few)
        == "No significant difference at 5%: only 3 examples differ, too few for the sign test to show one."
    )
    mixed = _compare(_ok("abcd", 0.0) + _ok("efg", 1.0), _ok("abcd", 1.0) + _ok("efg", 0.0))
    assert reading(mixed) == "No significant difference at 5%: B wins 4 and loses 3 of the 7 examples that differ."
    assert reading(_compare(_ok("ab", 1.0), _ok("ab", 1.0))).startswith("Every shared example scored the same")
    apart = _compare(_ok("ab", 1.0), _ok("cd", 1.0))
    assert reading(apart).startswith("The two batches share no scored example")
    assert "2 only A, 2 only B (not tested)" in headline(apart)
