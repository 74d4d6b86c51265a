"""A flow's cascades over time (`flowstudio cascade report FLOW`), from the decisions the store keeps.

Escalation rate per window of calls, cost per call split student/teacher, accuracy on reviewed
runs (by who answered), and the break-even point: the teacher's cost spent up front (warming
the memory) against what each call saves compared with asking the teacher every time.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from studio.store.feedback import FeedbackRecord
from studio.store.teacher import Decision

WARMING = "warming the memory"
"""The reason a warming batch's teacher calls record."""


@dataclass(frozen=True)
class Window:
    """Consecutive cascade calls (after warming)."""

    first: int
    """The window's first call, counted from 1."""
    started_at: str
    """When its first call was made."""
    calls: int
    """Calls in the window."""
    escalated: int
    """Of them, answered by the teacher."""
    cost_usd: float
    """What they cost, student and teacher."""

    @property
    def rate(self) -> float:
        """Share of the window's calls the teacher answered."""
        return self.escalated / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class Accuracy:
    """Reviewed runs of the cascade, by who answered."""

    by: str
    """`student`, `teacher` or `all`."""
    reviewed: int
    """Reviewed runs with a verdict."""
    good: int
    """Of them, judged good."""

    @property
    def share(self) -> float | None:
        """Share judged good; None without a review."""
        return self.good / self.reviewed if self.reviewed else None


@dataclass(frozen=True)
class CascadeReport:
    """What `flowstudio cascade report` shows."""

    flow: str
    """The flow's name."""
    calls: int
    """Cascade calls after warming."""
    escalated: int
    """Of them, answered by the teacher."""
    warm_calls: int
    """Teacher calls made to warm the memory."""
    warm_cost_usd: float
    """What warming cost: the teacher's up-front cost."""
    student_cost_usd: float
    """The student's calls (after warming)."""
    teacher_cost_usd: float
    """The teacher's escalations (after warming)."""
    teacher_price_usd: float | None
    """What one teacher call costs on average (None before any)."""
    windows: list[Window]
    """Escalation over time."""
    accuracy: list[Accuracy]
    """On reviewed runs, overall and by who answered."""

    @property
    def cost_per_call(self) -> float | None:
        """What one cascade call costs on average, student and teacher."""
        return (self.student_cost_usd + self.teacher_cost_usd) / self.calls if self.calls else None

    @property
    def saving_per_call(self) -> float | None:
        """A teacher call's price minus a cascade call's cost; None when either is unknown."""
        if self.teacher_price_usd is None or self.cost_per_call is None:
            return None
        return self.teacher_price_usd - self.cost_per_call

    @property
    def break_even_calls(self) -> float | None:
        """Calls after which the savings pay back the warming cost; None when a call saves nothing."""
        saving = self.saving_per_call
        if saving is None or saving <= 0:
            return None
        return self.warm_cost_usd / saving

    def as_json(self) -> dict[str, Any]:
        """The report as JSON (`--json`)."""
        return {
            **{k: v for k, v in asdict(self).items() if k not in ("windows", "accuracy")},
            "escalation_rate": self.escalated / self.calls if self.calls else None,
            "cost_per_call": self.cost_per_call,
            "saving_per_call": self.saving_per_call,
            "break_even_calls": self.break_even_calls,
            "windows": [{**asdict(w), "rate": w.rate} for w in self.windows],
            "accuracy": [{**asdict(a), "share": a.share} for a in self.accuracy],
        }


def report(flow: str, decisions: list[Decision], feedback: list[FeedbackRecord], window: int = 50) -> CascadeReport:
    """The report over a flow's decisions (oldest first) and its runs' reviews."""
    warm = [d for d in decisions if d.reason == WARMING]
    live = [d for d in decisions if d.reason != WARMING]
    taught = [d for d in decisions if d.by == "teacher" and d.teacher_cost_usd > 0]
    price = sum(d.teacher_cost_usd for d in taught) / len(taught) if taught else None
    return CascadeReport(
        flow=flow,
        calls=len(live),
        escalated=sum(d.by == "teacher" for d in live),
        warm_calls=len(warm),
        warm_cost_usd=sum(d.teacher_cost_usd + d.student_cost_usd for d in warm),
        student_cost_usd=sum(d.student_cost_usd for d in live),
        teacher_cost_usd=sum(d.teacher_cost_usd for d in live),
        teacher_price_usd=price,
        windows=windows(live, window),
        accuracy=accuracy(live, feedback),
    )


def windows(decisions: list[Decision], size: int) -> list[Window]:
    """The decisions in consecutive windows of `size` calls."""
    found = []
    for start in range(0, len(decisions), max(size, 1)):
        part = decisions[start : start + size]
        found.append(
            Window(
                start + 1,
                part[0].created_at,
                len(part),
                sum(d.by == "teacher" for d in part),
                sum(d.student_cost_usd + d.teacher_cost_usd for d in part),
            )
        )
    return found


def accuracy(decisions: list[Decision], feedback: list[FeedbackRecord]) -> list[Accuracy]:
    """Reviewed runs judged good, overall and by who answered (a run where any call escalated counts
    as the teacher's)."""
    verdicts: dict[str, bool] = {}
    for record in feedback:  # oldest first: the newest verdict of a run counts
        if record.key == "verdict" and record.good is not None:
            verdicts[record.run_id] = record.good
    who: dict[str, str] = {}
    for d in decisions:
        if d.run_id is not None:
            who[d.run_id] = "teacher" if d.by == "teacher" or who.get(d.run_id) == "teacher" else "student"
    found = []
    for by in ("all", "student", "teacher"):
        runs = [r for r in who if r in verdicts and by in ("all", who[r])]
        found.append(Accuracy(by, len(runs), sum(verdicts[r] for r in runs)))
    return found


def lines(r: CascadeReport) -> list[str]:
    """The report as text lines for people."""
    money = _money
    out = [f"cascade report: {r.flow}"]
    if not r.calls and not r.warm_calls:
        return [*out, "no cascade calls recorded yet (a node with `strategy: cascade` records each call)"]
    out.append(f"warming: {r.warm_calls} teacher call(s), {money(r.warm_cost_usd)} up front")
    if r.calls:
        out.append(
            f"calls: {r.calls}, escalated to the teacher: {r.escalated} ({r.escalated / r.calls:.0%}); "
            f"cost: student {money(r.student_cost_usd)}, teacher {money(r.teacher_cost_usd)}"
        )
    if r.cost_per_call is not None:
        out.append(f"cost per call: {money(r.cost_per_call)}" + _against(r))
    out.append(_break_even(r))
    if r.windows:
        out.append("escalation over time:")
        out += [
            f"  calls {w.first}-{w.first + w.calls - 1} (from {w.started_at[:16].replace('T', ' ')}): "
            f"{w.escalated}/{w.calls} escalated ({w.rate:.0%}), {money(w.cost_usd)}"
            for w in r.windows
        ]
    reviewed = [a for a in r.accuracy if a.reviewed]
    if not reviewed:
        out.append("accuracy: no reviewed run yet (flowstudio review RUN_ID --verdict good/bad)")
    for a in reviewed:
        out.append(f"accuracy ({a.by} answered): {a.good}/{a.reviewed} reviewed runs good ({a.share:.0%})")
    return out


def _money(usd: float) -> str:
    return f"${usd:.6f}"


def _against(r: CascadeReport) -> str:
    if r.teacher_price_usd is None:
        return ""
    return f" (the teacher alone: {_money(r.teacher_price_usd)})"


def _break_even(r: CascadeReport) -> str:
    calls = r.break_even_calls
    if r.saving_per_call is None:
        return "break-even: unknown until the teacher has answered once and the student has been asked"
    if calls is None:
        return "break-even: never at this rate (a cascade call costs as much as the teacher's)"
    state = "paid back" if r.calls >= calls else f"{max(calls - r.calls, 0):.0f} more to go"
    return f"break-even: after {calls:.0f} calls ({state}; saves {_money(r.saving_per_call)} a call)"
