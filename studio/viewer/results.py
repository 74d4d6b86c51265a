"""A batch's results for people: the summary cards and the example table (expected against
got, failures first). Pure functions over stored records; the page draws them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from studio.errors import FlowError
from studio.evaluate.datasets import read_rows
from studio.evaluate.summary import cache_text, percentile
from studio.store.base import ExperimentRecord, RunRecord
from studio.viewer.lists import MISSING, human_seconds, short
from studio.viewer.trace import seconds


def _key(inputs: dict[str, Any]) -> str:
    return json.dumps(inputs, sort_keys=True, ensure_ascii=False, default=str)


def expected_by_inputs(config: dict[str, Any]) -> dict[str, list[Any]]:
    """Each dataset row's expected outputs, keyed by its flow inputs (rows in file order)."""
    inputs, expected, data = config.get("inputs") or {}, config.get("expected") or {}, config.get("data")
    if not expected or not data:
        return {}
    try:
        rows = read_rows(Path(data))[0]
    except FlowError:
        return {}
    found: dict[str, list[Any]] = {}
    for _, row in rows:
        key = _key({name: row.get(column) for name, column in inputs.items()})
        value = {name: row.get(column) for name, column in expected.items()}
        found.setdefault(key, []).append(value)
    return found


def shown_value(value: dict[str, Any] | None) -> str:
    """A single-output dict shows as its value; anything else as JSON; None as —."""
    if value is None:
        return MISSING
    if len(value) == 1:
        (only,) = value.values()
        return MISSING if only is None else short(only, 80)
    return short(value, 80)


def _rank(row: dict[str, Any]) -> int:
    if row["status"] != "succeeded":
        return 0
    score = row["score"]
    return 1 if isinstance(score, float) and score < 1.0 else 2


def example_table(experiment: ExperimentRecord, runs: list[RunRecord]) -> list[dict[str, Any]]:
    """One row per run: status, score, inputs, expected, got, error, tokens, cost, latency;
    failed runs first, then wrong answers, then the rest (each group in run order)."""
    summary = experiment.summary or {}
    scores = summary.get("scores") if isinstance(summary.get("scores"), dict) else {}
    expected = expected_by_inputs(experiment.config)
    rows = []
    for run in runs:
        wanted = expected.get(_key(run.inputs))
        score = scores.get(run.run_id) if scores else None
        took = seconds(run.started_at, run.ended_at)
        rows.append(
            {
                "run": run.run_id,
                "status": run.status,
                "score": float(score) if isinstance(score, int | float) else None,
                "inputs": shown_value(run.inputs),
                "expected": shown_value(wanted.pop(0)) if wanted else MISSING,
                "got": shown_value(run.outputs),
                "error": short(run.error, 120) if run.error else MISSING,
                "tokens": run.tokens,
                "cost_usd": round(run.cost_usd, 10),
                "latency_s": round(took, 3) if took is not None else None,
            }
        )
    return sorted(rows, key=_rank)


UNFINISHED = ("running", "cancelled", "interrupted")
"""Run statuses that are no example's result (a stopped batch's runs in flight end `cancelled`)."""


def cards(experiment: ExperimentRecord, runs: list[RunRecord]) -> list[tuple[str, str, str | None]]:
    """(label, value, note) for the summary cards: score with its CI, errors, cost (tokens when
    every call was free), tokens, p50/p95 latency. Read from the summary, else from the runs."""
    summary = experiment.summary or {}
    score, ci = summary.get("score"), summary.get("score_ci")
    latencies = [t for t in (seconds(r.started_at, r.ended_at) for r in runs) if t is not None]
    errors = summary.get("errors")
    if errors is None:
        errors = sum(r.status == "failed" for r in runs)
    tokens = summary.get("tokens", sum(r.tokens for r in runs))
    cost = summary.get("cost_usd", sum(r.cost_usd for r in runs))
    score_text = MISSING if not isinstance(score, int | float) else f"{score:.3f}"
    ci_text = f"95% CI {ci[0]:.3f} to {ci[1]:.3f}" if isinstance(ci, list) and len(ci) == 2 else None
    examples = summary.get("examples", sum(r.status not in UNFINISHED for r in runs))
    cost_card = (
        ("Cost", f"${cost:.6f}", f"${cost / examples:.6f} per example" if examples else None)
        if cost
        else ("Cost", f"{tokens} tokens", "free model: counted in tokens")
    )
    p50 = summary.get("latency_p50_s", percentile(latencies, 50) if latencies else None)
    p95 = summary.get("latency_p95_s", percentile(latencies, 95) if latencies else None)
    return [
        ("Score", score_text, ci_text),
        ("Errors", str(errors), f"of {examples} examples"),
        cost_card,
        ("Tokens", str(tokens), cache_text(summary)),
        ("Latency p50", human_seconds(p50), None),
        ("Latency p95", human_seconds(p95), None),
    ]
