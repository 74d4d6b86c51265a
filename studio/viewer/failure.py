"""Why a run failed: the failing step, its error, and the nearest upstream step whose output it read."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from studio.flow.refs import FLOW_INPUTS
from studio.store.base import StepRecord
from studio.viewer.names import parse_step_name
from studio.viewer.trace import GraphNode, Trace

_BAD_INPUT = re.compile(r"^input (?P<port>[A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Cause:
    """The first place to look: an upstream step (or the run's inputs) and the values it handed over."""

    node: str
    """A step name, or `inputs` for the run's own inputs."""
    step: StepRecord | None
    output: dict[str, Any] | None
    """The values the failing step read from it (port → value)."""
    reason: str


@dataclass(frozen=True)
class Failure:
    """The first failing step of a run (None when the run failed outside any step)."""

    step: StepRecord | None
    error: str
    kind: str | None
    cause: Cause | None
    upstream: tuple[str, ...]
    """Every upstream node the failing step read from, nearest first."""


def find_failure(trace: Trace) -> Failure | None:
    """The root failure: the first failed step in recording order (inner steps finish before their node)."""
    failed = next((s for s in trace.steps if s.status == "failed"), None)
    if failed is None:
        if trace.run.status != "failed":
            return None
        return Failure(None, trace.run.error or "", None, None, ())
    name = parse_step_name(failed.node)
    causes = _sibling_causes(trace, failed) if name.nested else []
    if not causes:
        causes = _graph_causes(trace, failed, trace.graph.nodes.get(name.top))
    return Failure(
        step=failed,
        error=failed.error or "",
        kind=failed.error_kind,
        cause=causes[0] if causes else None,
        upstream=tuple(c.node for c in causes),
    )


def _graph_causes(trace: Trace, failed: StepRecord, node: GraphNode | None) -> list[Cause]:
    if node is None:
        return []
    ran = [dep for dep in node.data_deps if trace.step(dep) is not None]
    if not ran:
        read = [w for w in node.wires if w.source == FLOW_INPUTS]
        if not read:
            return []
        values = {w.source_port: trace.run.inputs.get(w.source_port) for w in read}
        return [Cause(FLOW_INPUTS, None, values, "it reads only the run's inputs")]
    bad_port = _rejected_port(failed)
    causes = []
    for dep in ran:
        step = trace.step(dep)
        assert step is not None
        ports = [w for w in node.wires if w.source == dep]
        values = {w.source_port: (step.outputs or {}).get(w.source_port) for w in ports}
        if bad_port and any(w.port == bad_port for w in ports):
            rank, reason = 0, f"its output feeds input {bad_port!r}, which the failing node rejected"
        elif step.status in ("skipped", "failed"):
            rank, reason = 1, f"it {step.status}, so its outputs read as null"
        else:
            rank, reason = 2, "the last upstream node it read from to finish before it"
        causes.append((rank, Cause(dep, step, values, reason)))
    causes.sort(key=lambda item: item[1].step.ended_at if item[1].step else "", reverse=True)
    causes.sort(key=lambda item: item[0])
    return [cause for _, cause in causes]


def _sibling_causes(trace: Trace, failed: StepRecord) -> list[Cause]:
    """Inside a sub-flow the graph is not stored: the steps of the same iteration that finished earlier."""
    scope = parse_step_name(failed.node).scope
    before = [
        s
        for s in trace.steps
        if s.node != failed.node and parse_step_name(s.node).scope == scope and s.ended_at <= failed.started_at
    ]
    before.sort(key=lambda s: s.ended_at, reverse=True)
    reason = "the last step of the same iteration to finish before it"
    return [Cause(s.node, s, s.outputs, reason) for s in before]


def _rejected_port(step: StepRecord) -> str | None:
    if step.error_kind != "bad_input" or not step.error:
        return None
    match = _BAD_INPUT.match(step.error)
    return match.group("port") if match else None


SETTINGS_KINDS = frozenset({"auth", "no_model", "missing_model", "bad_config", "load_failed", "bad_request"})
"""Error kinds caused by a node's own model settings, not by what upstream nodes handed it."""


@dataclass(frozen=True)
class Blame:
    """Where to look first, matched to the error kind."""

    where: str
    """`settings`: the failing node's model settings; `upstream`: the node that produced its input;
    `inputs`: the run's inputs; `node`: the failing node itself."""
    node: str | None
    """The node to open: the failing node for `settings`/`node`, the producer for `upstream`."""
    text: str
    """One sentence for people."""


def blame(trace: Trace, failure: Failure) -> Blame | None:
    """An auth or configuration error points at the failing node's model settings (its upstream
    nodes were fine); a rejected input at the upstream node that produced it; otherwise the
    nearest upstream cause, when there is one."""
    if failure.step is None:
        return None
    node = failure.step.node
    if failure.kind in SETTINGS_KINDS:
        models = sorted({c.model for c in trace.calls_of(node) if c.model})
        used = f" (model {', '.join(models)})" if models else ""
        what = "credentials (API key)" if failure.kind == "auth" else "configuration"
        text = (
            f"the model settings of {node}{used}: this {failure.kind} error comes from its {what}, not from its inputs"
        )
        return Blame("settings", node, text)
    cause = failure.cause
    if cause is None:
        return Blame("node", node, f"{node} itself: nothing upstream fed it")
    if cause.node == FLOW_INPUTS:
        return Blame("inputs", None, f"the run's inputs: {cause.reason}")
    return Blame("upstream", cause.node, f"{cause.node}: {cause.reason}")
