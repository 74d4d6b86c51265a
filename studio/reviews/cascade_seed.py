"""Seed cascades' memories from reviewed runs (`flowstudio cascade seed FLOW --from-reviews`).

A run counts by its newest review, as for datasets: a good verdict confirms what each cascade
node answered; a correction of a flow output that reads a cascade node's answer
(`$node.text`, `$node.label`) replaces it; a bad verdict without a correction seeds nothing.
Each answer is kept as if the teacher had given it, under the question the node would ask.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from studio.runtime.compiler import Plan
from studio.runtime.memory import book_for
from studio.store.feedback import FeedbackRecord
from studio.store.teacher import KeptExample


@dataclass(frozen=True)
class Seeded:
    """What seeding kept."""

    runs: int
    """Reviewed runs read."""
    examples: int
    """Answers kept (one per cascade node and run)."""


def cascade_nodes(plan: Plan) -> dict[str, str]:
    """The plan's cascade nodes that can be seeded, with the output field holding their answer."""
    found = {}
    for node_id, planned in plan.nodes.items():
        node = planned.node
        if getattr(node.config, "strategy", None) == "cascade" and hasattr(node, "cascade_query") and node.tunable:
            found[node_id] = node.tunable.output
    return found


def seed_from_reviews(store: Any, plan: Plan) -> Seeded:
    """Keep the reviewed answers of every cascade node of `plan` in the store's teacher book."""
    flow = plan.flow.spec.name
    nodes = cascade_nodes(plan)
    newest: dict[str, FeedbackRecord] = {}
    for record in store.feedback_of_flow(flow):
        newest[record.run_id] = record  # oldest first: the newest stays
    book, kept = book_for(store), 0
    for record in newest.values():
        run = store.get_run(record.run_id)
        if run is None or not nodes:
            continue
        steps = {s.node: s for s in store.steps(run.run_id) if s.status == "succeeded"}
        for node_id, field in nodes.items():
            step = steps.get(node_id)
            answer = _answer(plan, record, node_id, field, step.outputs if step else None)
            if step is None or answer is None:
                continue
            query, inputs = plan.nodes[node_id].node.cascade_query(step.inputs)  # type: ignore[attr-defined]
            book.remember(KeptExample(flow, node_id, query, inputs, answer, run.version, run.run_id))
            kept += 1
    return Seeded(len(newest), kept)


def _answer(plan: Plan, record: FeedbackRecord, node: str, field: str, outputs: dict[str, Any] | None) -> str | None:
    """The node's reviewed answer: a correction of a flow output reading it, else its own when good."""
    for name, value in (record.correction or {}).items():
        if plan.flow.spec.outputs.get(name) == f"${node}.{field}":
            return _text(value)
    if record.good is True and outputs is not None and field in outputs:
        return _text(outputs[field])
    return None


def _text(answer: Any) -> str:
    """An answer as the memory keeps it: text as it is, an object (`llm.structured`) as JSON."""
    return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
