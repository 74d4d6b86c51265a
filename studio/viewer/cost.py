"""Where the money went: cost and tokens by node and by model, summed over model calls."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from studio.store.base import CallRecord
from studio.viewer.names import top_node
from studio.viewer.trace import Trace


@dataclass(frozen=True)
class CostRow:
    """The calls of one node (or model), added up."""

    key: str
    calls: int
    tokens: int
    cost_usd: float


def _group(calls: list[CallRecord], key: Callable[[CallRecord], str]) -> list[CostRow]:
    groups: dict[str, list[CallRecord]] = {}
    for call in calls:
        groups.setdefault(key(call), []).append(call)
    rows = [
        CostRow(name, len(group), sum(c.input_tokens + c.output_tokens for c in group), sum(c.cost_usd for c in group))
        for name, group in groups.items()
    ]
    return sorted(rows, key=lambda r: (-r.cost_usd, -r.tokens, r.key))


def cost_by_node(trace: Trace, *, per_step: bool = False) -> list[CostRow]:
    """Cost per top-level node (sub-flow calls count toward their node), or per step name."""
    return _group(trace.calls, (lambda c: c.node) if per_step else (lambda c: top_node(c.node)))


def cost_by_model(trace: Trace) -> list[CostRow]:
    """Cost per model string."""
    return _group(trace.calls, lambda c: c.model)


def total_cost(trace: Trace) -> float:
    """The sum of every model call of the run."""
    return sum(c.cost_usd for c in trace.calls)
