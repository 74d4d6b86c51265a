"""Metrics: `metric(example, outputs) -> float` in [0, 1].

`example` is the dataset row as read, `outputs` the flow's outputs. Built in:

- `exact`: normalised text equality (case, punctuation, articles and spacing ignored);
- `contains`: the normalised expected text occurs in the normalised output;
- `f1`: token-overlap F1 of the normalised texts (SQuAD's answer F1);
- `regex`: the expected column holds a pattern, searched in the output (anchor it with ^…$);
- `json_match`: the output parsed as JSON (the first {...} or [...] in the text) against the
  expected JSON: for an object, the share of expected keys whose values match; otherwise 1 or 0;
- `llm_judge`: a model alias of the flow grades the outputs against a rubric, 0-10 → 0-1.

The built-ins compare each flow output with its expected column (`--expect`) and average
over those pairs. Anything else is a Python callable named `module:function` (imported
from the working directory) or registered under the `flowstudio.metrics` entry-point group;
it gets the row and the outputs as they are.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import re
import string
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.errors import InputError
from studio.plugins import plugins

GROUP = "flowstudio.metrics"
MetricFn = Callable[[dict[str, Any], dict[str, Any]], float | Awaitable[float]]
Compare = Callable[[Any, Any], float]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
DEFAULT_RUBRIC = "The answer is correct: it agrees with the expected values given in the example."


class MetricError(Exception):
    """A metric raised or returned something other than a number in [0, 1]."""


def as_text(value: Any) -> str:
    """A value as the text metrics compare: strings as they are, the rest as compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def is_number(value: Any) -> bool:
    """Whether the value is a number, or text that is one ("42", " -3.5 "); booleans and None are not."""
    return _NUMBER.fullmatch(as_text(value).strip()) is not None and not isinstance(value, bool)


def normalise(value: Any) -> str:
    """Lower case, no punctuation, no articles, single spaces."""
    text = as_text(value).lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact(expected: Any, actual: Any) -> float:
    return float(normalise(expected) == normalise(actual))


def contains(expected: Any, actual: Any) -> float:
    return float(normalise(expected) in normalise(actual))


def f1(expected: Any, actual: Any) -> float:
    gold, guess = normalise(expected).split(), normalise(actual).split()
    if not gold or not guess:
        return float(gold == guess)
    common = sum((Counter(gold) & Counter(guess)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(guess), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def regex(pattern: Any, actual: Any) -> float:
    try:
        compiled = re.compile(as_text(pattern))
    except re.error as err:
        raise MetricError(f"expected value {pattern!r} is not a valid regex: {err}") from None
    return float(compiled.search(as_text(actual)) is not None)


def parse_json(value: Any) -> Any:
    """A JSON value from text: the whole text, else its first {...} or [...] block; raises ValueError."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        pass
    for opening, closing in ("{}", "[]"):
        start, end = value.find(opening), value.rfind(closing)
        if 0 <= start < end:
            try:
                return json.loads(value[start : end + 1])
            except json.JSONDecodeError:
                continue
    raise ValueError("no JSON value in the text")


def json_match(expected: Any, actual: Any) -> float:
    try:
        gold = parse_json(expected)
    except ValueError:
        raise MetricError(f"expected value {as_text(expected)[:80]!r} is not JSON") from None
    try:
        guess = parse_json(actual)
    except ValueError:
        return 0.0
    if isinstance(gold, dict):
        if not isinstance(guess, dict) or not gold:
            return float(guess == gold)
        return sum(key in guess and _same(gold[key], guess[key]) for key in gold) / len(gold)
    return float(_same(gold, guess))


def _same(gold: Any, guess: Any) -> bool:
    if isinstance(gold, dict | list) or isinstance(guess, dict | list):
        return bool(gold == guess)
    return normalise(gold) == normalise(guess)


BUILTIN: dict[str, Compare] = {"exact": exact, "contains": contains, "f1": f1, "regex": regex, "json_match": json_match}
NAMES = (*BUILTIN, "llm_judge")


@dataclass
class PairMetric:
    """A built-in comparison averaged over (flow output, expected column) pairs."""

    compare: Compare
    expect: Mapping[str, str]

    def __call__(self, example: dict[str, Any], outputs: dict[str, Any]) -> float:
        scores = [self.compare(example[column], outputs.get(output)) for output, column in self.expect.items()]
        return sum(scores) / len(scores)


class LLMJudge:
    """Asks a model alias to grade the outputs against a rubric; counts its own calls."""

    def __init__(self, client: Any, alias: str, rubric: str, *, temperature: float = 0.0, max_tokens: int = 8) -> None:
        self.client = client
        self.alias = alias
        self.rubric = rubric
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.calls = 0
        self.tokens = 0
        self.cost_usd = 0.0

    def prompt(self, example: dict[str, Any], outputs: dict[str, Any]) -> str:
        return (
            "Grade an answer against a rubric.\n"
            f"Rubric: {self.rubric}\n"
            f"Example: {json.dumps(example, ensure_ascii=False, sort_keys=True)}\n"
            f"Answer: {json.dumps(outputs, ensure_ascii=False, sort_keys=True)}\n"
            "Score from 0 (fails the rubric) to 10 (fully meets it).\nScore:"
        )

    async def __call__(self, example: dict[str, Any], outputs: dict[str, Any]) -> float:
        from studio.models.base import ModelError, Request

        request = Request(
            prompt=self.prompt(example, outputs),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            stop=("\n",),
        )
        self.calls += 1
        try:
            reply = await self.client.complete(request)
        except ModelError as err:
            raise MetricError(f"judge model {self.alias!r} failed: {err}") from None
        self.tokens += reply.input_tokens + reply.output_tokens
        self.cost_usd += reply.cost_usd
        return judge_score(reply.text)


def judge_score(reply: str) -> float:
    """A judge's reply as a score: its first number out of 10, or yes/pass (1) and no/fail (0)."""
    number = _NUMBER.search(reply)
    if number:
        return min(max(float(number.group()), 0.0), 10.0) / 10
    words = set(re.findall(r"[a-z]+", reply.lower()))
    if words & {"yes", "pass", "correct"}:
        return 1.0
    if words & {"no", "fail", "incorrect", "wrong"}:
        return 0.0
    raise MetricError(f"judge reply has no score: {reply.strip()[:80]!r}")


@dataclass
class Metric:
    """A named metric; `score` awaits async metrics and checks the range."""

    name: str
    fn: MetricFn

    async def score(self, example: dict[str, Any], outputs: dict[str, Any]) -> float:
        try:
            value = self.fn(example, outputs)
            if inspect.isawaitable(value):
                value = await value
        except MetricError:
            raise
        except Exception as err:
            raise MetricError(f"metric {self.name!r} raised {type(err).__name__}: {err}") from None
        if isinstance(value, bool):
            return float(value)
        if not isinstance(value, int | float) or math.isnan(value) or not 0 <= value <= 1:
            raise MetricError(f"metric {self.name!r} returned {value!r}, not a number in [0, 1]")
        return float(value)


def resolve_metric(
    name: str,
    *,
    expect: Mapping[str, str],
    plan: Any = None,
    judge: str | None = None,
    rubric: str | None = None,
) -> Metric:
    """The metric called `name`: a built-in, an entry point, or `module:function`; raises InputError."""
    if name in BUILTIN or name == "llm_judge":
        if not expect:
            outputs = sorted(plan.outputs) if plan is not None else []
            raise InputError(
                f"metric {name!r} compares outputs with expected columns, and no column is named like a flow "
                f"output {outputs}; use --expect OUTPUT=COLUMN",
                field="--metric",
            )
        if name == "llm_judge":
            return Metric(name, _judge(plan, judge, rubric))
        return Metric(name, PairMetric(BUILTIN[name], dict(expect)))
    found = plugins(GROUP)
    if name in found:
        return Metric(name, _callable(found[name].load(), name))
    if ":" in name:
        return Metric(name, _import(name))
    raise InputError(
        f"unknown metric {name!r}; built in: {', '.join(NAMES)}; or module:function, or an entry point in {GROUP}",
        field="--metric",
    )


def _judge(plan: Any, alias: str | None, rubric: str | None) -> LLMJudge:
    from studio.models import client_for

    if plan is None:
        raise InputError("llm_judge needs the flow's model aliases", field="--metric")
    alias = alias or ("judge" if "judge" in plan.models else "default")
    if alias not in plan.models:
        raise InputError(
            f"judge model alias {alias!r} is not in the flow's models {sorted(plan.models)}; "
            f"add it or pass --model {alias}=MODEL",
            field="--judge",
        )
    spec = plan.models[alias]
    text = rubric or DEFAULT_RUBRIC
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text(encoding="utf-8").strip()
        except OSError as err:
            raise InputError(f"cannot read the rubric: {err.strerror}", file=text[1:], field="--rubric") from None
    return LLMJudge(client_for(spec, plan.flow.base_dir), alias, text, temperature=spec.temperature or 0.0)


def _import(name: str) -> MetricFn:
    module_name, _, attribute = name.partition(":")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # a user's module may fail in any way while importing
        raise InputError(
            f"cannot import metric module {module_name!r}: {type(err).__name__}: {err}", field="--metric"
        ) from None
    try:
        return _callable(getattr(module, attribute), name)
    except AttributeError:
        raise InputError(f"module {module_name!r} has no {attribute!r}", field="--metric") from None


def _callable(value: Any, name: str) -> MetricFn:
    if not callable(value):
        raise InputError(f"metric {name!r} is not callable", field="--metric")
    fn: MetricFn = value
    return fn
