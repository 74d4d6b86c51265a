"""The counterfactual versions of a node that blame tries: re-sampled, other demos, the optimizer's variant.

- `resample`: the node's model calls at temperature > 0 with a new seed (any number of draws).
- `demos`: the node (a type whose tunable surface has `demos`) with other worked examples: with
  demos of its own, each one left out, then the demos in other orders; with none, demos built from
  the node's own step (inputs and answer) in other runs of the experiment that scored 1. Each
  distinct demo set is one counterfactual, run at the node's own settings (greedy as a rule).
- `variant`: the node's config from the optimizer's chosen flow for the same flow file (the latest
  finished `optimize` experiment whose input flow has the run's hash): its `--out` file while it
  still loads, else the chosen candidate's edits read back from the report. One counterfactual,
  at the node's own settings; skipped when no optimization is stored or it left the node unchanged.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.errors import FlowError
from studio.flow.spec import Flow, load_flow, load_flow_text
from studio.node import Tunable
from studio.runtime import registry
from studio.runtime.compiler import Plan, compile_flow
from studio.store.base import Store

RESAMPLE = "resample"
DEMOS = "demos"
VARIANT = "variant"
KINDS = (RESAMPLE, DEMOS, VARIANT)
"""Every counterfactual kind, in the order blame tries them on a node."""
POOL_DEMOS = 3
"""Demos in one set taken from other examples' runs (a node with no demos of its own)."""
POOL_RUNS = 24
"""Good runs read at most for one node's demo pool (a seeded choice among them)."""
OPTIMIZE = "optimize"
"""The experiment kind the optimizer records (`studio.optimize.optimization.KIND`)."""


@dataclass(frozen=True)
class Alternative:
    """One counterfactual config of a node: the fields set on top of its own config."""

    kind: str
    """`demos` or `variant`."""
    config: dict[str, Any]
    """The node's whole config in this counterfactual."""


def parse_kinds(text: str) -> tuple[str, ...]:
    """`resample,demos` → ("resample", "demos"); raises ValueError naming an unknown kind."""
    kinds = tuple(dict.fromkeys(k.strip() for k in text.split(",") if k.strip()))
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise ValueError(f"unknown counterfactual kind {', '.join(unknown) or '(none)'}; use {', '.join(KINDS)}")
    return kinds


def surface(plan: Plan, node: str) -> Tunable | None:
    """The node type's tunable surface, or None (control nodes, custom nodes without one)."""
    found = registry.get(plan.flow.spec.nodes[node].type)
    return found.tunable if found is not None else None


def own_config(plan: Plan, node: str) -> dict[str, Any]:
    """The node's config as the flow file writes it."""
    return dict(plan.flow.spec.nodes[node].config)


def demo_sets(plan: Plan, node: str, pool: list[dict[str, Any]], limit: int, seed: int = 0) -> list[list[Any]]:
    """Up to `limit` distinct demo lists for the node other than its own (none for a node
    without `demos` on its tunable surface)."""
    shape = surface(plan, node)
    if shape is None or DEMOS not in shape.fields or limit < 1:
        return []
    own = list(own_config(plan, node).get(DEMOS) or [])
    options: list[list[Any]] = []
    if own:
        options += [own[:i] + own[i + 1 :] for i in range(len(own))]  # each one left out
        options += [own[i:] + own[:i] for i in range(1, len(own))]  # other orders
        options += [own[::-1]] if len(own) > 2 else []
    elif pool:
        rng = random.Random(f"{node}-{seed}")
        size = min(POOL_DEMOS, len(pool))
        options += [rng.sample(pool, size) for _ in range(limit * 3)]
    seen = {_key(own)}
    distinct = []
    for demos in options:
        if _key(demos) not in seen:
            seen.add(_key(demos))
            distinct.append(demos)
    return distinct[:limit]


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def pool_demos(
    store: Store, plan: Plan, node: str, good_runs: list[str], exclude: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Demos of the node from other runs that scored 1 (up to POOL_RUNS of them): its step's inputs
    plus its answer under the surface's output port (text and label for a classifier); never one
    whose inputs are `exclude` (the failing run's own: that demo would hand the node its answer);
    none when the answer's name is also an input's (the demo could not show them apart)."""
    shape = surface(plan, node)
    if shape is None or DEMOS not in shape.fields:
        return []
    chosen = list(good_runs)
    random.Random(node).shuffle(chosen)
    pool: dict[str, dict[str, Any]] = {}
    for run_id in chosen[:POOL_RUNS]:
        step = next((s for s in store.steps(run_id) if s.node == node and s.status == "succeeded"), None)
        if step is None or step.outputs is None or shape.output not in step.outputs:
            continue
        inputs = dict(step.inputs or {})
        if exclude is not None and _key(inputs) == _key(exclude):
            continue
        if shape.output in inputs and not shape.labels:
            return []
        demo = shape.demo(inputs, step.outputs[shape.output])
        pool.setdefault(_key(demo), demo)
    return list(pool.values())


def variant_config(store: Store, plan: Plan, node: str, flow_hash: str) -> dict[str, Any] | None:
    """The node's config in the optimizer's chosen flow for this flow, when one is stored and
    changed the node; None otherwise."""
    for experiment in store.list_experiments(limit=200, kind=OPTIMIZE):
        summary = experiment.summary or {}
        if experiment.config.get("flow_hash") != flow_hash or summary.get("status") != "finished":
            continue
        config = _from_file(summary, node, plan.flow) or _from_report(summary, node, own_config(plan, node))
        if config is not None and config != own_config(plan, node):
            return config
        return None
    return None


def _from_file(summary: Mapping[str, Any], node: str, base: Flow) -> dict[str, Any] | None:
    """The node's config in the optimizer's `--out` file, while it loads and still has the node."""
    out = summary.get("flow_out")
    if not out or not Path(out).is_file():
        return None
    try:
        flow = load_flow(out)
    except (FlowError, OSError):
        return None
    spec = flow.spec.nodes.get(node)
    if spec is None or spec.type != base.spec.nodes[node].type:
        return None
    return dict(spec.config)


def _from_report(summary: Mapping[str, Any], node: str, config: dict[str, Any]) -> dict[str, Any] | None:
    """The node's config rebuilt from the report: the chosen candidate's and its ancestors' edits
    (`sets`: dotted path → value, None where removed) under `nodes.NODE.config`."""
    rows = {row.get("candidate"): row for row in summary.get("candidates") or []}
    chain: list[Mapping[str, Any]] = []
    current = (summary.get("after") or {}).get("candidate")
    while current in rows and len(chain) <= len(rows):
        chain.append(rows[current])
        current = rows[current].get("parent")
    if not chain:
        return None
    prefix = f"nodes.{node}."
    edited = dict(config)
    for row in reversed(chain):
        for path, value in (row.get("sets") or {}).items():
            if path == f"nodes.{node}" and value is None:
                return None  # the optimizer removed the node
            if not path.startswith(prefix + "config."):
                continue
            key = path[len(prefix + "config.") :]
            if "." in key:
                return None  # a nested edit: not rebuilt here
            if value is None:
                edited.pop(key, None)
            else:
                edited[key] = value
    return edited


def with_config(plan: Plan, node: str, config: dict[str, Any], models: Mapping[str, str]) -> Plan:
    """The plan with one top-level node's config replaced (raises FlowError or SpecError when the
    flow no longer compiles with it)."""
    data = json.loads(json.dumps(plan.flow.document.data, default=str))
    data["nodes"][node]["config"] = config
    file = f"{plan.flow.file} [blame: {node}]"
    flow = load_flow_text(json.dumps(data), file=file, path=plan.flow.path)
    return compile_flow(flow, models)


def alternatives(
    store: Store,
    plan: Plan,
    node: str,
    kinds: tuple[str, ...],
    *,
    good_runs: list[str],
    flow_hash: str,
    limit: int,
    given: dict[str, Any] | None = None,
) -> list[Alternative]:
    """The node's `demos` and `variant` counterfactuals (in that order) among `kinds`; `given` is
    what the node was given in the failing run (no demo from another run may repeat it)."""
    found: list[Alternative] = []
    if DEMOS in kinds:
        pool = [] if own_config(plan, node).get(DEMOS) else pool_demos(store, plan, node, good_runs, given)
        for demos in demo_sets(plan, node, pool, limit):
            found.append(Alternative(DEMOS, {**own_config(plan, node), DEMOS: demos}))
    if VARIANT in kinds:
        config = variant_config(store, plan, node, flow_hash)
        if config is not None:
            found.append(Alternative(VARIANT, config))
    return found
