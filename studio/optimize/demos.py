"""Demo pools per node: bootstrapped from train runs that scored well, or labelled from train rows.

Bootstrapping is DSPy's BootstrapFewShot idea: run the flow on train examples, keep the runs
whose final outputs the metric accepts, and take each LLM node's own inputs and answer from
those traces as worked examples, so a multi-node flow gets demos for its inner nodes too.
A node that reads only flow inputs and whose answer is (or passes through a template to) a
flow output with an expected column also gets labelled demos straight from the train rows:
a tiny model that is almost never right zero-shot has no good runs to bootstrap from.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from studio.evaluate.datasets import Dataset, Example
from studio.flow.refs import FLOW_INPUTS, Ref
from studio.flow.spec import Flow
from studio.optimize.candidates import TunableNode, feeds_output
from studio.store.base import CallRecord, StepRecord

GOOD = 1.0 - 1e-9
"""A train run scoring at least this (after rounding) is a good run to learn from."""
FAIR = 0.5
"""Runs scoring at least this are used when too few runs are good."""


@dataclass
class Trace:
    """The flow's run on one train example, as the proposer and the bootstrapper read it."""

    example: Example
    score: float
    outputs: dict[str, Any] | None
    error: str | None
    steps: dict[str, StepRecord]
    """Node id → its step in the run."""
    truncated: frozenset[str] = frozenset()
    """Nodes whose answer was cut off at its token cap in this run."""
    run_id: str | None = None
    """The stored run (None when it never started)."""


def truncated(calls: list[CallRecord]) -> frozenset[str]:
    """The nodes of a run with a model call that used its whole `max_tokens`: a reply cut off there
    ("So, set the thermostat to 18 degrees. I'm") is no example to learn from."""
    return frozenset(
        call.node
        for call in calls
        if not call.error and call.output_tokens >= int(call.request.get("max_tokens") or 1 << 30)
    )


def as_demo(node: TunableNode, inputs: dict[str, Any], answer: Any) -> dict[str, Any]:
    """A demo of `node`: its inputs and its answer (as text), in the shape its type reads demos."""
    return node.surface.demo(inputs, answer)


def _unique(demos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for demo in demos:
        seen.setdefault(json.dumps(demo, sort_keys=True, ensure_ascii=False), demo)
    return list(seen.values())


def expressible(node: TunableNode) -> bool:
    """Whether demos can show the node's inputs and its answer apart.

    `llm.generate` demos hold the prompt's variables plus the answer under `text`, so a prompt
    with a variable named `text` has no place for the answer.
    """
    return node.surface.labels or node.port not in node.inputs


def bootstrapped(node: TunableNode, traces: list[Trace]) -> list[dict[str, Any]]:
    """The node's inputs and answer from each good train run (fair runs when fewer than two are good)."""
    if not expressible(node):
        return []
    good = [t for t in traces if t.score >= GOOD]
    if len(good) < 2:
        good = [t for t in traces if t.score >= FAIR]
    demos = []
    for trace in good:
        if trace.truncated & _fed_by(node):
            continue  # the node's answer or one of its inputs was cut off at a token cap
        demo = traced_demo(node, trace)
        if demo is not None:
            demos.append(demo)
    return _unique(_valid(node, demos))


def traced_demo(node: TunableNode, trace: Trace) -> dict[str, Any] | None:
    """The node's inputs and answer in a run, as a demo; None when its step did not succeed."""
    step = trace.steps.get(node.id)
    if step is None or step.status != "succeeded" or not step.outputs or step.inputs is None:
        return None
    return as_demo(node, dict(step.inputs), step.outputs.get(node.port, ""))


def _fed_by(node: TunableNode) -> set[str]:
    """The node itself and the nodes its wires read."""
    wired = {value.node for value in node.inputs.values() if isinstance(value, Ref) and value.node != FLOW_INPUTS}
    return {node.id, *wired}


def well_formed(demo: dict[str, Any]) -> bool:
    """Whether every field a demo shows holds something: no empty text, list, object or null."""
    return all(_filled(value) for value in demo.values())


def _filled(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, (list, dict)):
        return bool(value)
    return isinstance(value, (int, float, bool))


def labelled(flow: Flow, node: TunableNode, train: Dataset) -> list[dict[str, Any]]:
    """Demos from the train rows themselves, where the node's answer is a flow output's expected value."""
    reads = node.flow_inputs()
    fed = [output for output in train.expect if feeds_output(flow, node, output)]
    if reads is None or len(fed) != 1 or not expressible(node):
        return []
    column = train.expect[fed[0]]
    demos = []
    for example in train.examples:
        inputs = {variable: example.inputs.get(name) for variable, name in reads.items()}
        demos.append(as_demo(node, inputs, example.row[column]))
    return _unique(_valid(node, demos))


def topped_up(
    node: TunableNode, bootstrapped: list[dict[str, Any]], labelled: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Bootstrapped classify demos plus the labelled ones of every label no good run shows (as
    DSPy's BootstrapFewShot fills up with labelled demos): a label the model never gets right
    has no good run to learn from, and it is the one a demo must show."""
    if not node.surface.labels or not bootstrapped:
        return bootstrapped
    shown = {demo["label"] for demo in bootstrapped}
    return bootstrapped + [demo for demo in labelled if demo["label"] not in shown]


def unseen(train: Dataset, shown: set[str]) -> list[Example]:
    """Train examples none of whose input values a demo holds (`shown`, see `Candidate.shown`)."""
    return [e for e in train.examples if not any(str(v) in shown for v in e.inputs.values())]


def _valid(node: TunableNode, demos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Only well-formed demos; for classify, only those whose label is one of the node's labels."""
    demos = [d for d in demos if well_formed(d)]
    if not node.surface.labels:
        return demos
    labels = set(node.config.get("labels") or [])
    return [d for d in demos if d["label"] in labels]


def pick(pool: list[dict[str, Any]], k: int, rng: random.Random, answer: str) -> list[dict[str, Any]]:
    """`k` demos drawn from `pool` in random order, spread evenly over the distinct `answer` values."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for demo in pool:
        groups.setdefault(json.dumps(demo.get(answer), sort_keys=True), []).append(demo)
    for group in groups.values():
        rng.shuffle(group)
    keys = list(groups)
    rng.shuffle(keys)
    chosen: list[dict[str, Any]] = []
    while len(chosen) < min(k, len(pool)):
        for key in keys:
            if groups[key] and len(chosen) < k:
                chosen.append(groups[key].pop())
    rng.shuffle(chosen)
    return chosen
