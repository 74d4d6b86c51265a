"""A batch's results: each example's outcome and score, and the typed summary over them."""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from studio.evaluate.datasets import Example
from studio.evaluate.executors import Outcome
from studio.evaluate.metrics import LLMJudge, Metric
from studio.store.base import Store


@dataclass
class ExampleResult:
    """One example's outcome and its score."""

    index: int
    line: int
    outcome: Outcome
    score: float | None = None
    metric_error: str | None = None
    resumed: bool = False

    def as_json(self, example: Example) -> dict[str, Any]:
        """One line of `--out results.jsonl`."""
        o = self.outcome
        return {
            "index": self.index,
            "line": self.line,
            "run_id": o.run_id,
            "status": o.status,
            "inputs": example.inputs,
            "outputs": o.outputs,
            "expected": example.expected,
            "score": self.score,
            "error": o.error or self.metric_error,
            "tokens": o.tokens,
            "cost_usd": round(o.cost_usd, 10),
            "latency_s": round(o.latency_s, 4),
        }


def confidence_interval(scores: list[float], z: float = 1.96) -> tuple[float, float]:
    """95% interval of the mean score: Wilson's for 0/1 scores, else the normal one, within [0, 1]."""
    n = len(scores)
    if n == 0:
        return (0.0, 0.0)
    mean = sum(scores) / n
    if all(s in (0.0, 1.0) for s in scores):
        centre = (mean + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(mean * (1 - mean) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    else:
        centre = mean
        half = z * (statistics.stdev(scores) if n > 1 else 0.0) / math.sqrt(n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def percentile(values: Iterable[float], q: float) -> float:
    """Nearest-rank percentile (q in 0-100); 0 for no values."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True, eq=False)
class BatchSummary(Mapping[str, Any]):
    """The summary stored with the experiment and printed by `batch --json`; reads as that JSON
    mapping too (`summary["score"]`)."""

    experiment_id: str
    flow: str
    """The flow's name."""
    status: str
    """`finished`: every example ran and was scored."""
    metric: str | None
    examples: int
    succeeded: int
    failed: int
    """Examples whose run did not succeed (scored 0)."""
    metric_errors: int
    """Examples the metric could not score (scored 0)."""
    errors: int
    score: float | None
    """Mean score; None without a metric."""
    score_ci: list[float] | None
    """95% interval of the mean score."""
    cost_usd: float
    cost_per_example: float
    tokens: int
    latency_p50_s: float
    latency_p95_s: float
    ran: int
    """Examples run by this call (the others were read back from the experiment)."""
    resumed: int
    seconds: float
    examples_per_s: float | None
    judge: dict[str, Any] | None = None
    """The LLM judge's calls, tokens and cost, when the metric is one."""
    calls: int = 0
    """Model calls the examples run by this call made."""
    cache_hits: int = 0
    """Of those, the ones the LLM cache answered: no tokens and no cost are counted for them."""
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    """Failed examples by why they failed (`rate_limit`, `server`, `timeout`, `auth`, ...)."""
    failed_lines: list[int] = field(default_factory=list)
    """The dataset lines of the failed examples (`batch --resume ID --retry-errors` runs them again)."""

    def as_json(self) -> dict[str, Any]:
        """The summary as JSON (`judge` only when the metric is an LLM judge)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.judge is None:
            del data["judge"]
        return data

    def __getitem__(self, key: str) -> Any:
        return self.as_json()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.as_json())

    def __len__(self) -> int:
        return len(self.as_json())


def summarise(
    results: list[ExampleResult], metric: Metric | None, *, experiment_id: str, flow: str, seconds: float, ran: int
) -> BatchSummary:
    """The summary of a batch's results, in dataset order."""
    n = len(results)
    outcomes = [r.outcome for r in results]
    scores = [r.score for r in results if r.score is not None]
    failed = sum(o.status != "succeeded" for o in outcomes)
    metric_errors = sum(r.metric_error is not None for r in results)
    cost = sum(o.cost_usd for o in outcomes)
    latencies = [o.latency_s for o in outcomes]
    score = sum(scores) / len(scores) if scores else None
    judge = None
    if metric is not None and isinstance(metric.fn, LLMJudge):
        fn = metric.fn
        judge = {"calls": fn.calls, "tokens": fn.tokens, "cost_usd": round(fn.cost_usd, 10)}
    return BatchSummary(
        experiment_id=experiment_id,
        flow=flow,
        status="finished",
        metric=metric.name if metric else None,
        examples=n,
        succeeded=n - failed,
        failed=failed,
        metric_errors=metric_errors,
        errors=failed + metric_errors,
        score=round(score, 6) if score is not None else None,
        score_ci=[round(x, 6) for x in confidence_interval(scores)] if scores else None,
        cost_usd=round(cost, 10),
        cost_per_example=round(cost / n, 10) if n else 0.0,
        tokens=sum(o.tokens for o in outcomes),
        latency_p50_s=round(percentile(latencies, 50), 4),
        latency_p95_s=round(percentile(latencies, 95), 4),
        ran=ran,
        resumed=n - ran,
        seconds=round(seconds, 3),
        examples_per_s=round(ran / seconds, 2) if seconds > 0 else None,
        judge=judge,
        calls=sum(o.calls for o in outcomes),
        cache_hits=sum(o.cache_hits for o in outcomes),
        errors_by_kind=dict(Counter(o.error_kind or "error" for o in outcomes if o.status == "failed").most_common()),
        failed_lines=[r.line for r in results if r.outcome.status == "failed"],
    )


def classify_failures(store: Store, results: list[ExampleResult]) -> None:
    """Give each failed result its kind (in place), from the store's steps of its run: the
    innermost failed step's kind, since a sub-flow's parent only says `sub_flow`."""
    for result in results:
        outcome = result.outcome
        if outcome.status != "failed" or outcome.error_kind is not None:
            continue
        if outcome.run_id is None:
            outcome.error_kind = "exception"
            continue
        kinds: list[str] = [s.error_kind for s in store.steps(outcome.run_id) if s.status == "failed" and s.error_kind]
        specific = [k for k in kinds if k not in ("sub_flow", "node_error")]
        outcome.error_kind = specific[0] if specific else kinds[0] if kinds else "error"


def cache_text(summary: Mapping[str, Any]) -> str | None:
    """`12 of 80 model calls from the LLM cache`, which is why tokens and cost can read 0; None when
    the cache answered none (or the summary predates the count)."""
    hits, calls = summary.get("cache_hits") or 0, summary.get("calls") or 0
    return f"{hits} of {calls} model calls from the LLM cache" if hits else None


def first_errors(results: list[ExampleResult], limit: int = 5) -> Iterator[str]:
    """The first distinct error messages, each once: the first row that had it, and how many more
    rows failed the same way (a missing key fails every example alike)."""
    rows: dict[str, list[int]] = {}
    for result in results:
        message = result.outcome.error if result.outcome.status != "succeeded" else result.metric_error
        if message is None:
            continue
        text = re.sub(r"^row \d+: ", "", message)
        if text in rows or len(rows) < limit:
            rows.setdefault(text, []).append(result.line)
    for text, lines in rows.items():
        more = len(lines) - 1
        again = f" (and {more} more row{'s' if more > 1 else ''} with this error)" if more else ""
        yield f"row {lines[0]}: {text}{again}"


def first_mismatches(results: list[ExampleResult], examples: list[Example], limit: int = 3) -> Iterator[str]:
    """The first examples that ran but scored below 1: inputs, expected and what the flow gave."""
    count = 0
    for item in results:
        if item.outcome.status != "succeeded" or item.score is None or item.score >= 1.0 or item.metric_error:
            continue
        if count == limit:
            return
        count += 1
        example = examples[item.index]
        outputs = item.outcome.outputs or {}
        got = {name: outputs.get(name) for name in example.expected} if example.expected else outputs
        yield (
            f"row {item.line} (score {item.score:.2f}): inputs {_compact(example.inputs)}, "
            f"expected {_compact(example.expected)}, got {_compact(got)}"
        )


def _compact(value: Any, width: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"
