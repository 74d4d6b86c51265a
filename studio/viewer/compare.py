"""Two runs of the same flow side by side: what differs per step in inputs, outputs, cost and time."""

from __future__ import annotations

from dataclasses import dataclass

from studio.store.base import StepRecord
from studio.viewer.nodes import Shown, shown_status
from studio.viewer.trace import Trace, seconds


@dataclass(frozen=True)
class StepDiff:
    """One step name in run A and run B (None where a run has no such step)."""

    step: str
    a: StepRecord | None
    b: StepRecord | None

    @property
    def status_a(self) -> Shown | None:
        return shown_status(self.a) if self.a else None

    @property
    def status_b(self) -> Shown | None:
        return shown_status(self.b) if self.b else None

    @property
    def changed(self) -> tuple[str, ...]:
        """Which of status, inputs, outputs and error differ."""
        if self.a is None or self.b is None:
            return ("only in " + ("B" if self.a is None else "A"),)
        fields = ("status", "inputs", "outputs", "error")
        return tuple(f for f in fields if getattr(self.a, f) != getattr(self.b, f))


def compare_runs(a: Trace, b: Trace) -> list[StepDiff]:
    """Steps matched by name (the last record of each), in A's order, then those only B has."""
    last_a = {s.node: s for s in a.steps}
    last_b = {s.node: s for s in b.steps}
    names = list(dict.fromkeys([*last_a, *last_b]))
    return [StepDiff(name, last_a.get(name), last_b.get(name)) for name in names]


def _seconds(step: StepRecord | None) -> float | None:
    took = seconds(step.started_at, step.ended_at) if step else None
    return round(took, 3) if took is not None else None


def compare_rows(diffs: list[StepDiff]) -> list[dict[str, object]]:
    """The comparison table: one row per step."""
    return [
        {
            "step": d.step,
            "status A": d.status_a,
            "status B": d.status_b,
            "differs": ", ".join(d.changed) or "same",
            "cost A": round(d.a.cost_usd, 10) if d.a else None,
            "cost B": round(d.b.cost_usd, 10) if d.b else None,
            "seconds A": _seconds(d.a),
            "seconds B": _seconds(d.b),
            "tokens A": d.a.tokens if d.a else None,
            "tokens B": d.b.tokens if d.b else None,
        }
        for d in diffs
    ]
