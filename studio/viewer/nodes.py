"""Per-node and per-step rows of a trace: status, attempts, tokens, cost, time, model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from studio.store.base import CallRecord, StepRecord
from studio.viewer.names import parse_step_name, top_node
from studio.viewer.trace import Trace, seconds

Shown = Literal["succeeded", "failed", "skipped", "cached", "reused", "waiting", "running", "not run"]


@dataclass(frozen=True)
class NodeSummary:
    """One top-level node of a run, with everything that ran under it added up."""

    node: str
    type: str
    status: Shown
    steps: int
    """Step records under this node: itself plus its sub-flow steps (map items, iterations)."""
    iterations: int
    """Distinct map items or loop iterations seen under it (0 for a plain node)."""
    attempts: int
    calls: int
    tokens: int
    cost_usd: float
    seconds: float | None
    models: tuple[str, ...]
    error: str | None


def shown_status(step: StepRecord) -> Shown:
    """A step's status as the viewer colors it: cached and reused are told apart from succeeded."""
    if step.status == "succeeded" and step.reused:
        return "reused"
    if step.status == "succeeded" and step.cached:
        return "cached"
    return step.status


def _status(own: StepRecord | None, steps: list[StepRecord], running: bool) -> Shown:
    if own is not None:
        return shown_status(own)
    statuses = {s.status for s in steps}
    for status in ("failed", "waiting"):
        if status in statuses:
            return status
    if steps:
        return "running" if running else "succeeded"
    return "not run"


def _span(steps: list[StepRecord]) -> float | None:
    if not steps:
        return None
    return seconds(min(s.started_at for s in steps), max(s.ended_at for s in steps))


def node_summaries(trace: Trace) -> list[NodeSummary]:
    """One summary per node, in graph order; costs come from the model calls, so nothing counts twice."""
    calls_by_node: dict[str, list[CallRecord]] = {}
    for call in trace.calls:
        calls_by_node.setdefault(top_node(call.node), []).append(call)
    summaries = []
    for node in trace.node_ids():
        steps = trace.steps_of(node)
        own = [s for s in steps if s.node == node]
        calls = calls_by_node.get(node, [])
        graph_node = trace.graph.nodes.get(node)
        iterations = {parse_step_name(s.node).parts[0][1] for s in steps} - {None}
        failed = next((s for s in reversed(steps) if s.status == "failed"), None)
        summaries.append(
            NodeSummary(
                node=node,
                type=graph_node.type if graph_node else "?",
                status=_status(own[-1] if own else None, steps, trace.run.status == "running"),
                steps=len(steps),
                iterations=len(iterations),
                attempts=max((s.attempt for s in own), default=0),
                calls=len(calls),
                tokens=sum(c.input_tokens + c.output_tokens for c in calls),
                cost_usd=sum(c.cost_usd for c in calls),
                seconds=_span(steps),
                models=tuple(dict.fromkeys(c.model for c in calls)),
                error=failed.error if failed else None,
            )
        )
    return summaries


def node_rows(trace: Trace) -> list[dict[str, Any]]:
    """The per-node table."""
    return [
        {
            "node": s.node,
            "type": s.type,
            "status": s.status,
            "steps": s.steps,
            "iterations": s.iterations or None,
            "attempts": s.attempts or None,
            "calls": s.calls,
            "tokens": s.tokens,
            "cost_usd": round(s.cost_usd, 10),
            "seconds": round(s.seconds, 3) if s.seconds is not None else None,
            "model": ", ".join(s.models) or None,
            "error": s.error,
        }
        for s in node_summaries(trace)
    ]


def step_rows(trace: Trace, node: str | None = None) -> list[dict[str, Any]]:
    """One row per step (per iteration and map item), optionally only those under `node`."""
    steps = trace.steps_of(node) if node is not None else trace.steps
    rows = []
    for step in steps:
        name = parse_step_name(step.node)
        calls = trace.calls_of(step.node)
        took = seconds(step.started_at, step.ended_at)
        rows.append(
            {
                "step": step.node,
                "node": name.top,
                "iteration": name.scope or None,
                "status": shown_status(step),
                "attempt": step.attempt,
                "tokens": step.tokens,
                "cost_usd": round(step.cost_usd, 10),
                "seconds": round(took, 3) if took is not None else None,
                "model": ", ".join(dict.fromkeys(c.model for c in calls)) or None,
                "error": step.error,
            }
        )
    return rows
