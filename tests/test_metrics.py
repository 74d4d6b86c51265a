"""Metrics: built-ins, range checks, llm_judge on a scripted model, user metrics by module:function."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from studio.errors import InputError
from studio.evaluate.metrics import (
    MetricError,
    contains,
    exact,
    f1,
    json_match,
    judge_score,
    normalise,
    regex,
    resolve_metric,
)
from studio.flow.spec import load_flow_text
from studio.runtime.compiler import compile_flow

EXPECT = {"answer": "gold"}


def test_normalise_ignores_case_punctuation_articles_and_spacing() -> None:
    assert normalise("  The  Eiffel tower!! ") == "eiffel tower"
    assert normalise(12) == "12" and normalise(None) == "" and normalise({"y": 1, "x": 2}) == "x 2 y 1"


@pytest.mark.parametrize(
    ("metric", "expected", "actual", "score"),
    [
        (exact, "Paris", "paris.", 1.0),
        (exact, "Paris", "Paris, France", 0.0),
        (exact, 4, "4", 1.0),
        (contains, "Paris", "It is Paris, France.", 1.0),
        (contains, "Lyon", "It is Paris.", 0.0),
        (f1, "the cat sat", "a cat sat down", 0.8),
        (f1, "cat", "dog", 0.0),
        (f1, "", "", 1.0),
        (regex, r"^\d+$", "42", 1.0),
        (regex, r"^\d+$", "42 apples", 0.0),
        (json_match, {"name": "Ann", "age": 30}, '{"name": "ann", "age": "30"}', 1.0),
        (json_match, '{"name": "Ann", "age": 30, "city": "Oslo"}', 'Sure! {"name": "Ann", "age": 31} done', 1 / 3),
        (json_match, {"name": "Ann"}, "no json here", 0.0),
        (json_match, [1, 2], "[1, 2]", 1.0),
    ],
)
def test_builtin_comparisons(metric: Any, expected: Any, actual: Any, score: float) -> None:
    assert metric(expected, actual) == pytest.approx(score)


def test_bad_pattern_or_expected_json_is_a_metric_error() -> None:
    with pytest.raises(MetricError, match="not a valid regex"):
        regex("(", "x")
    with pytest.raises(MetricError, match="not JSON"):
        json_match("{oops", "{}")


async def test_resolved_builtin_averages_over_expected_pairs() -> None:
    metric = resolve_metric("exact", expect={"a": "x", "b": "y"})
    assert await metric.score({"x": "1", "y": "2"}, {"a": "1", "b": "3"}) == 0.5


def test_builtin_without_expected_column_is_bad_input() -> None:
    with pytest.raises(InputError, match="--expect OUTPUT=COLUMN"):
        resolve_metric("f1", expect={})
    with pytest.raises(InputError, match="unknown metric 'accuracy'"):
        resolve_metric("accuracy", expect=EXPECT)


def test_module_function_from_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_metrics.py").write_text(
        "def length_ok(example, outputs):\n    return len(outputs['answer']) <= int(example['max'])\n"
        "def broken(example, outputs):\n    raise KeyError('gold')\n"
        "def too_big(example, outputs):\n    return 2\n"
        "async def later(example, outputs):\n    return 0.25\n"
        "NOT_CALLABLE = 3\n"
    )
    monkeypatch.chdir(tmp_path)
    assert resolve_metric("my_metrics:length_ok", expect={}).name == "my_metrics:length_ok"
    metric = resolve_metric("my_metrics:length_ok", expect={})
    assert math.isclose(metric_score(metric, {"max": "3"}, {"answer": "abc"}), 1.0)
    assert metric_score(resolve_metric("my_metrics:later", expect={}), {}, {}) == 0.25
    with pytest.raises(MetricError, match="raised KeyError"):
        metric_score(resolve_metric("my_metrics:broken", expect={}), {}, {})
    with pytest.raises(MetricError, match="returned 2, not a number in"):
        metric_score(resolve_metric("my_metrics:too_big", expect={}), {}, {})
    with pytest.raises(InputError, match="not callable"):
        resolve_metric("my_metrics:NOT_CALLABLE", expect={})
    with pytest.raises(InputError, match="has no 'missing'"):
        resolve_metric("my_metrics:missing", expect={})
    with pytest.raises(InputError, match="cannot import metric module 'nowhere'"):
        resolve_metric("nowhere:f", expect={})


def metric_score(metric: Any, example: dict[str, Any], outputs: dict[str, Any]) -> float:
    import asyncio

    return float(asyncio.run(metric.score(example, outputs)))


JUDGED = """
flowstudio: 1
name: judged
inputs: {q: {type: str}}
outputs: {answer: $a.text}
models:
  default: {model: scripted, script: [{reply: x}]}
  judge:
    model: scripted
    script:
      - {match: "Answer: .*Paris", reply: " 9"}
      - {match: "Answer: .*Lyon", reply: " no, wrong city"}
      - {reply: " hmm"}
    input_cost_per_token: 0.001
nodes:
  a: {type: text.template, config: {template: x}}
"""


async def test_llm_judge_grades_with_the_judge_alias_and_counts_its_calls() -> None:
    plan = compile_flow(load_flow_text(JUDGED))
    metric = resolve_metric("llm_judge", expect=EXPECT, plan=plan, rubric="Names the right capital.")
    assert await metric.score({"gold": "Paris"}, {"answer": "Paris"}) == pytest.approx(0.9)
    assert await metric.score({"gold": "Paris"}, {"answer": "Lyon"}) == 0.0
    with pytest.raises(MetricError, match="no score"):
        await metric.score({"gold": "Paris"}, {"answer": "Rome"})
    judge: Any = metric.fn
    assert judge.calls == 3 and judge.tokens > 0 and judge.cost_usd > 0
    assert "Rubric: Names the right capital." in judge.prompt({}, {})
    with pytest.raises(InputError, match="judge model alias 'grader'"):
        resolve_metric("llm_judge", expect=EXPECT, plan=plan, judge="grader")


def test_judge_score_parsing() -> None:
    assert judge_score(" 7/10") == 0.7 and judge_score("12") == 1.0 and judge_score("Yes.") == 1.0
    assert judge_score("fail") == 0.0
