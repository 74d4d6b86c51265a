"""A run's steps on a time line: when each started and ended, packed into lanes so that steps
that ran at the same time sit side by side (a Gantt chart; the app draws it with Vega-Lite).

Times are seconds from the run's start. A step without an end time (still running, or a record
cut short) is drawn up to the run's end, or the latest time the trace knows, and marked `open`.
Skipped steps did not run and have no bar.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from studio.store.base import StepRecord
from studio.viewer.names import top_node
from studio.viewer.nodes import Shown, shown_status
from studio.viewer.trace import Trace

STATUS_COLORS: dict[Shown, str] = {
    "succeeded": "#16a34a",
    "failed": "#dc2626",
    "skipped": "#cbd5e1",
    "cached": "#0d9488",
    "reused": "#7c3aed",
    "waiting": "#d97706",
    "running": "#2563eb",
    "not run": "#9ca3af",
}
"""The canvas's status colours (`frontend/src/colors.ts`), so a bar matches its node's card."""
ROWS_PER_STEP_UP_TO = 40
"""Up to this many bars each step gets its own named row; above, bars share packed lanes."""
MIN_BAR_SHARE = 0.004
"""The least width of a drawn bar, as a share of the whole time line (an instant stays visible)."""


@dataclass(frozen=True)
class Bar:
    """One step on the time line."""

    step: str
    """The step's name (`node`, or `map[2].node` inside a sub-flow)."""
    node: str
    """The top-level node it ran under."""
    status: Shown
    attempt: int
    start_s: float
    """Seconds from the run's start."""
    end_s: float
    """Seconds from the run's start; for an `open` step, where its bar stops."""
    open: bool
    """No end time was recorded: `end_s` is the run's end (or the latest known time)."""
    lane: int
    """0-based; steps in one lane never overlap, steps that overlap are in different lanes."""
    tokens: int
    cost_usd: float

    @property
    def seconds(self) -> float | None:
        """How long the step took; None when it has no recorded end."""
        return None if self.open else self.end_s - self.start_s


def _instant(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    try:
        moment = dt.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def pack_lanes(spans: Iterable[tuple[float, float]]) -> list[int]:
    """A lane per span, in the order given: each span takes the lowest lane whose last span ended
    by its start (touching spans share a lane), so overlapping spans never share one."""
    ordered = sorted(enumerate(spans), key=lambda item: (item[1][0], item[1][1], item[0]))
    ends: list[float] = []
    lanes = [0] * len(ordered)
    for index, (start, end) in ordered:
        lane = next((i for i, last in enumerate(ends) if last <= start), len(ends))
        if lane == len(ends):
            ends.append(end)
        else:
            ends[lane] = end
        lanes[index] = lane
    return lanes


def bars(steps: Iterable[StepRecord], run_started: str | None, run_ended: str | None = None) -> list[Bar]:
    """The bars of these steps, ordered by start; steps without a readable start time, and skipped
    ones, are left out."""
    ran = [(s, _instant(s.started_at), _instant(s.ended_at)) for s in steps if s.status != "skipped"]
    ran = [(s, start, end) for s, start, end in ran if start is not None]
    if not ran:
        return []
    origin = _instant(run_started) or min(start for _, start, _ in ran if start)
    known = [t for _, start, end in ran for t in (start, end) if t is not None]
    last = _instant(run_ended) or max(known)
    spans = []
    for _, start, end in ran:
        begin = ((start or origin) - origin).total_seconds()
        stop = ((end or max(last, start or origin)) - origin).total_seconds()
        spans.append((begin, max(begin, stop)))
    lanes = pack_lanes(spans)
    found = [
        Bar(
            step=step.node,
            node=top_node(step.node),
            status=shown_status(step),
            attempt=step.attempt,
            start_s=span[0],
            end_s=span[1],
            open=end is None,
            lane=lane,
            tokens=step.tokens,
            cost_usd=step.cost_usd,
        )
        for (step, _, end), span, lane in zip(ran, spans, lanes, strict=True)
    ]
    return sorted(found, key=lambda b: (b.start_s, b.lane))


def timeline(trace: Trace) -> list[Bar]:
    """The run's step bars."""
    return bars(trace.steps, trace.run.started_at, trace.run.ended_at)


def _took(bar: Bar) -> str:
    return "— (no end recorded)" if bar.seconds is None else f"{bar.seconds:.3f} s"


def chart_rows(found: list[Bar]) -> list[dict[str, Any]]:
    """Rows for the chart: one named row per step when there are few, packed lanes otherwise;
    `shown_end` keeps an instant visible; the rest is for the tooltip."""
    span = max((b.end_s for b in found), default=0.0)
    least = span * MIN_BAR_SHARE
    per_step = len(found) <= ROWS_PER_STEP_UP_TO
    return [
        {
            "row": bar.step if per_step else f"lane {bar.lane + 1}",
            "step": bar.step,
            "status": bar.status,
            "attempt": bar.attempt,
            "start_s": round(bar.start_s, 4),
            "shown_end": round(max(bar.end_s, bar.start_s + least), 4),
            "took": _took(bar),
            "tokens": bar.tokens,
            "cost": f"${bar.cost_usd:.6f}" if bar.cost_usd else "—",
        }
        for bar in found
    ]


def most_parallel(found: list[Bar]) -> int:
    """How many steps ran at once at the busiest moment (the number of lanes)."""
    return max((b.lane for b in found), default=-1) + 1
