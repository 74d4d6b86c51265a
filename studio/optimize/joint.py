"""Joint bootstrapped demos: every LLM node of a multi-node flow shown the same good runs.

Per-node bootstrapping (`demos.bootstrapped`) draws each node's demos on its own, so an inner
node and the node it feeds may be shown different train examples. DSPy's
BootstrapFewShotWithRandomSearch gives every module the demos of the same few whole-pipeline
traces, and on a two-step flow that is what works: the classifier is shown exactly what the
extractor wrote on a run that came out right.

A good run only teaches what it got right for the right reason. An inner node with no
instructions is prompted by its template alone, and a tiny model then tends to answer the
template (a reply to a ticket) rather than do the step (copy the customer's words); runs that
still score are right by luck, and their demos teach the wrong step. DSPy avoids this with its
default instruction, the signature sentence ("Given the fields `ticket`, produce the fields
`words`."). So the runs that give joint demos are made with that sentence on every tunable node
that has no instructions, and a joint move sets the sentence along with the demos it was
bootstrapped under.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from studio.optimize.candidates import Path, TunableNode
from studio.optimize.demos import GOOD, Trace, expressible, traced_demo, well_formed
from studio.optimize.moves import Move, config_path

JOINT_SIZES = ((4, 2), (2, 1))
"""Joint demo sets raced: (runs shown, draws); BFSRS draws one to four traces per candidate."""


def signature(node: TunableNode) -> str:
    """DSPy's default instruction for the node: its template variables, then what it produces
    (the node's id, since a generic port name such as `text` says nothing of the step)."""
    inputs = ", ".join(f"`{name}`" for name in node.inputs)
    produced = node.id if node.port == "text" else node.port
    return f"Given the fields {inputs}, produce the fields `{produced}`."


def instructed(nodes: Sequence[TunableNode], configs: Mapping[str, Mapping[str, Any]]) -> dict[Path, Any]:
    """Edits that give the signature sentence to every node with no instructions (`configs`: the
    nodes' configs in the flow the runs are made from)."""
    return {
        config_path(node.id, "instructions"): signature(node)
        for node in nodes
        if "instructions" in node.surface.fields and not str(configs[node.id].get("instructions") or "").strip()
    }


@dataclass
class JointPool:
    """Joint demos: one entry per good run, node id → that node's demo from the run."""

    instructions: Mapping[Path, Any]
    """The signature edits the runs were made with (a joint move sets them too)."""
    runs: list[dict[str, dict[str, Any]]] = field(default_factory=list)


def pooled(nodes: Sequence[TunableNode], traces: Sequence[Trace], instructions: Mapping[Path, Any]) -> JointPool:
    """Every good run in which each node answered in full: its demos for all the nodes at once."""
    pool = JointPool(instructions)
    for trace in traces:
        if trace.score < GOOD or trace.truncated & {node.id for node in nodes}:
            continue
        demos = {node.id: traced_demo(node, trace) for node in nodes}
        if all(demo is not None and well_formed(demo) for demo in demos.values()):
            pool.runs.append({node_id: demo for node_id, demo in demos.items() if demo is not None})
    return pool


def joint_moves(pool: JointPool, rng: random.Random) -> list[Move]:
    """Moves that set every node's demos from the same drawn good runs, with the instructions
    those runs were made under; the move's node is the nodes' ids joined by `+`."""
    if len(pool.runs) < 2:
        return []
    nodes = list(pool.runs[0])
    moves = []
    for size, draws in JOINT_SIZES:
        for draw in range(draws if len(pool.runs) > size else 1):
            chosen = rng.sample(pool.runs, min(size, len(pool.runs)))
            edits: dict[Path, Any] = {config_path(node, "demos"): [run[node] for run in chosen] for node in nodes}
            again = f" (draw {draw + 1})" if draw else ""
            signed = ", with the signature instruction" if pool.instructions else ""
            description = f"{len(chosen)} joint bootstrapped demos{signed}{again}"
            moves.append(Move("demos", "+".join(nodes), description, {**pool.instructions, **edits}))
    return moves


def eligible(nodes: Sequence[TunableNode]) -> list[TunableNode]:
    """The nodes joint demos are for: those whose demos can show inputs and answer apart."""
    return [node for node in nodes if expressible(node)]
