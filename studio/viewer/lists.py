"""Rows of the runs list and the experiments pages."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from studio.store.base import ExperimentRecord, RunFilter, RunRecord
from studio.viewer.trace import seconds

PAGE_SIZE = 50


def day_filter(flow: str | None, status: str | None, first: dt.date | None, last: dt.date | None) -> RunFilter:
    """A run filter over whole days (UTC), `last` included."""
    until = (last + dt.timedelta(days=1)).isoformat() if last else None
    return RunFilter(flow=flow, status=status, since=first.isoformat() if first else None, until=until)


def page_count(total: int, page_size: int = PAGE_SIZE) -> int:
    """How many pages `total` rows fill (at least one, so an empty list still has page 1)."""
    return max(1, -(-total // page_size))


def human_seconds(value: float | None) -> str:
    """A duration for people: `0.42 s`, `3 min 5 s`, `2 h 4 min`, `3 d 1 h`; `-` while unfinished."""
    if value is None:
        return "-"
    if value < 60:
        return f"{value:.2f} s"
    whole = int(value)
    for unit, size, small, small_size in (("d", 86400, "h", 3600), ("h", 3600, "min", 60), ("min", 60, "s", 1)):
        if whole >= size:
            return f"{whole // size} {unit} {whole % size // small_size} {small}"
    raise AssertionError("unreachable")


def short(value: Any, width: int = 80) -> str:
    """A value on one line, cut to `width` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


MISSING = "—"
"""What a table cell shows for no value (no error, no expected output)."""


def run_rows(runs: list[RunRecord]) -> list[dict[str, Any]]:
    """The runs list: status, started, duration, steps, tokens, cost."""
    rows = []
    for run in runs:
        took = seconds(run.started_at, run.ended_at)
        rows.append(
            {
                "run": run.run_id,
                "flow": run.flow,
                "status": run.status,
                "started": run.started_at[:19].replace("T", " "),
                "seconds": round(took, 3) if took is not None else None,
                "steps": run.steps,
                "tokens": run.tokens,
                "cost_usd": round(run.cost_usd, 10),
                "error": short(run.error) if run.error else MISSING,
            }
        )
    return rows


def experiment_rows(experiments: list[ExperimentRecord]) -> list[dict[str, Any]]:
    """The experiments list."""
    return [
        {
            "experiment": e.experiment_id,
            "kind": e.kind,
            "flow": e.flow,
            "created": e.created_at[:19].replace("T", " "),
            "finished": e.summary is not None,
            "summary": short(e.summary) if e.summary else None,
        }
        for e in experiments
    ]


def _score(run: RunRecord, experiment: ExperimentRecord) -> float | None:
    """A run's score: `options.score`, else `summary.scores[run_id]` (batch results), else None."""
    score = run.options.get("score")
    if score is None and experiment.summary:
        scores = experiment.summary.get("scores")
        score = scores.get(run.run_id) if isinstance(scores, dict) else None
    return float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None


def example_rows(experiment: ExperimentRecord, runs: list[RunRecord]) -> list[dict[str, Any]]:
    """The examples table of an experiment: one row per run, with its inputs, outputs and score."""
    return [
        {
            "run": run.run_id,
            "status": run.status,
            "score": _score(run, experiment),
            "inputs": short(run.inputs, 60),
            "outputs": short(run.outputs, 60) if run.outputs is not None else None,
            "tokens": run.tokens,
            "cost_usd": round(run.cost_usd, 10),
            "error": short(run.error) if run.error else None,
        }
        for run in runs
    ]
