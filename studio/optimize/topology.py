"""Topology moves: add or remove a node from a small operator set (the AFlow / MASS idea).

They are made from the current best flow's plan, so a node an earlier move added can go again
and one it removed is not offered. Which nodes they apply to comes from what node types declare,
never from their type names: a *drafting* node writes a free-text answer from a `prompt`
(`Tunable.drafts`, e.g. `llm.generate`); a *reshaping* node only rewrites its inputs
(`Node.reshapes`, e.g. `text.template`). The nodes the moves add are the node types the
registry finds by role (`Node.roles`: `template`, `completion`, `tool_call`; flowstudio's own first).

- remove: a reshaping or drafting node with exactly one wire in, whose output has
  that wire's type; its consumers and the flow outputs read the wire instead. Never the last
  model node, a node under a `when` guard, or one another node names in `when` or `after`.
- tidy: after a drafting node a flow output reads, a `text.template` that keeps the first
  non-empty line of the answer, trimmed; the output reads it. No model call.
- answer: after such a node, an `llm.generate` in completion form that reads the node's prompt
  and its draft and writes the final answer only (AFlow's format operator): one call more.
- calculate: where a flow output is expected to be a number (every train answer is one), the
  drafting node behind it writes an arithmetic expression instead and a `tool.python` node
  works it out with the built-in `calculator` tool (AFlow's programmer operator, program-of-thought
  prompting); the output reads the tool's result. No model call more.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from studio.evaluate.datasets import Dataset
from studio.evaluate.metrics import is_number
from studio.flow.refs import FLOW_INPUTS, Ref, refs_in
from studio.node import Node
from studio.optimize.candidates import REMOVE, Path, answer_source
from studio.optimize.moves import Move
from studio.runtime import registry
from studio.runtime.compiler import Plan
from studio.types import PortType

TIDY = "{{ text.strip().split('\\n')[0].strip() }}"
"""The first non-empty line, trimmed (sandboxed Jinja2)."""
DRAFT = "draft"
"""The input an added answer node reads the draft from."""
ANSWER_SUFFIX = "_answer"
CALCULATE_SUFFIX = "_calculate"
EXPRESSION_CUE = "As an arithmetic expression:"
CALCULATE_DROPS = ("instructions", "demos", "strategy", "samples")
"""Config a node turned expression writer loses: it described, showed or sampled the old answers."""


def topology_moves(plan: Plan, numeric: Collection[str] = ()) -> list[Move]:
    """Every add and remove move on the flow `plan` was compiled from: the free ones first (tidy,
    calculate for the flow outputs named in `numeric`), then remove (cheaper), then answer (one call
    more)."""
    return [*tidy_moves(plan), *calculate_moves(plan, numeric), *remove_moves(plan), *answer_moves(plan)]


def _rewire(value: Any, old: str, new: str) -> Any:
    """The raw value with every reference `old` replaced by `new` (inside lists and mappings too)."""
    if isinstance(value, str):
        return new if value == old else value
    if isinstance(value, list):
        return [_rewire(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _rewire(v, old, new) for k, v in value.items()}
    return value


def _rewired(plan: Plan, old: str, new: str, *, consumers: bool) -> dict[Path, Any]:
    """Edits that make the flow outputs (and the nodes' inputs, when `consumers`) read `new` for `old`."""
    edits: dict[Path, Any] = {}
    for name, value in plan.flow.spec.outputs.items():
        if (changed := _rewire(value, old, new)) != value:
            edits["outputs", name] = changed
    for node_id, spec in plan.flow.spec.nodes.items() if consumers else ():
        for name, value in spec.inputs.items():
            if (changed := _rewire(value, old, new)) != value:
                edits["nodes", node_id, "inputs", name] = changed
    return edits


def _type(plan: Plan, ref: Ref) -> PortType | None:
    if ref.node == FLOW_INPUTS:
        return plan.input_types.get(ref.port)
    planned = plan.nodes.get(ref.node)
    return None if planned is None else planned.node.output_ports().get(ref.port)


def drafts(node: Node) -> bool:
    """Whether the node writes a free-text answer from a prompt (`Tunable.drafts`)."""
    return node.tunable is not None and node.tunable.drafts


def _answer(plan: Plan, node_id: str) -> Ref:
    """The port that carries a drafting node's answer (`Tunable.output`)."""
    tunable = plan.nodes[node_id].node.tunable
    return Ref(node_id, tunable.output if tunable is not None else "text")


def remove_moves(plan: Plan) -> list[Move]:
    """Remove a pass-through-shaped node; whatever read it reads its one input wire instead."""
    model_nodes = sum(1 for planned in plan.nodes.values() if planned.node.uses_model)
    named = {n for planned in plan.nodes.values() for n in planned.when_deps}
    named |= {n for spec in plan.flow.spec.nodes.values() for n in spec.after}
    moves = []
    for node_id, spec in plan.flow.spec.nodes.items():
        planned = plan.nodes[node_id]
        removable = planned.node.reshapes or drafts(planned.node)
        if not removable or spec.when is not None or node_id in named:
            continue
        if planned.node.uses_model and model_nodes == 1:
            continue
        wires = refs_in(dict(planned.inputs))
        ports = planned.node.output_ports()
        if len(wires) != 1 or len(ports) != 1:
            continue
        (wire,) = wires
        (port, port_type) = next(iter(ports.items()))
        if _type(plan, wire) != port_type:
            continue
        edits: dict[Path, Any] = {("nodes", node_id): REMOVE}
        edits.update(_rewired(plan, str(Ref(node_id, port)), str(wire), consumers=True))
        moves.append(Move("topology", node_id, f"remove the node (read {wire} instead)", edits))
    return moves


def _answering(plan: Plan) -> list[str]:
    """Drafting nodes whose answer a flow output reads directly, in file order."""
    read = {value for value in plan.outputs.values() if isinstance(value, Ref)}
    return [
        node_id
        for node_id in plan.flow.spec.nodes
        if drafts(plan.nodes[node_id].node) and _answer(plan, node_id) in read
    ]


def tidy_moves(plan: Plan) -> list[Move]:
    """A `text.template` after a drafting node that keeps the first non-empty line of its answer."""
    moves = []
    for node_id in _answering(plan):
        tidy = f"{node_id}_tidy"
        if tidy in plan.nodes:
            continue
        node = {
            "type": registry.with_role("template"),
            "description": "The first non-empty line of the answer, trimmed (added by the optimizer).",
            "inputs": {"text": str(_answer(plan, node_id))},
            "config": {"template": TIDY},
        }
        edits: dict[Path, Any] = {("nodes", tidy): node}
        edits.update(_rewired(plan, str(_answer(plan, node_id)), str(Ref(tidy, "text")), consumers=False))
        moves.append(Move("topology", node_id, f"add {tidy} (the first line of the answer)", edits))
    return moves


def answer_moves(plan: Plan) -> list[Move]:
    """An `llm.generate` after a drafting node that reads its draft and writes the final answer only."""
    moves = []
    for node_id in _answering(plan):
        spec = plan.flow.spec.nodes[node_id]
        answer = f"{node_id}{ANSWER_SUFFIX}"
        if node_id.endswith(ANSWER_SUFFIX) or answer in plan.nodes or DRAFT in spec.inputs:
            continue
        prompt = str(spec.config.get("prompt", "")).rstrip()
        config: dict[str, Any] = {"form": "completion"}
        if spec.config.get("instructions"):
            config["instructions"] = spec.config["instructions"]
        config["prompt"] = f"{prompt}\nDraft: {{{{ {DRAFT} }}}}\nFinal answer:"
        config["stop"] = ["\n"]
        node: dict[str, Any] = {
            "type": registry.with_role("completion"),
            "description": "Reads the draft answer and writes the final answer only (added by the optimizer).",
        }
        if spec.model is not None:
            node["model"] = spec.model
        if spec.when is not None:
            node["when"] = spec.when
        node["inputs"] = {**spec.inputs, DRAFT: str(_answer(plan, node_id))}
        node["config"] = config
        edits: dict[Path, Any] = {("nodes", answer): node}
        edits.update(_rewired(plan, str(_answer(plan, node_id)), str(Ref(answer, "text")), consumers=False))
        moves.append(Move("topology", node_id, f"add {answer} (a call that writes the final answer)", edits))
    return moves


def numeric_outputs(train: Dataset) -> list[str]:
    """Flow outputs whose expected value is a number in every train row (calculate's evidence)."""
    rows = [example.expected for example in train.examples]
    return [output for output in train.expect if rows and all(is_number(row.get(output)) for row in rows)]


def _behind(plan: Plan, output: str) -> tuple[str, str | None] | None:
    """The drafting node whose answer the flow output reads (see `answer_source`):
    (node, the reshaping node in between or None)."""
    source = answer_source(plan.flow, output)
    if source is None or source[0].node not in plan.nodes:
        return None
    wire, hop = source
    found = drafts(plan.nodes[wire.node].node) and wire == _answer(plan, wire.node)
    return (wire.node, hop) if found else None


def _read_elsewhere(plan: Plan, node_id: str, output: str, besides: str | None = None) -> bool:
    """Whether another flow output or any node but `besides` reads `node_id`, or names it in `when`
    or `after`."""
    if any(isinstance(v, Ref) and v.node == node_id for name, v in plan.outputs.items() if name != output):
        return True
    for other, planned in plan.nodes.items():
        if other == besides:
            continue
        spec = plan.flow.spec.nodes[other]
        if any(r.node == node_id for r in refs_in(dict(planned.inputs))):
            return True
        if node_id in planned.when_deps or node_id in spec.after:
            return True
    return False


def calculate_moves(plan: Plan, numeric: Collection[str]) -> list[Move]:
    """The node behind a numeric output writes an expression; the calculator tool works it out."""
    moves = []
    for output in numeric:
        found = _behind(plan, output)
        if found is None:
            continue
        node_id, hop = found
        calculate = f"{node_id}{CALCULATE_SUFFIX}"
        if calculate in plan.nodes or _read_elsewhere(plan, node_id, output, besides=hop):
            continue  # done already, or the node's answer has other readers an expression would break
        spec = plan.flow.spec.nodes[node_id]
        cues = [f"{name.replace('_', ' ').capitalize()}: {{{{ {name} }}}}" for name in spec.inputs]
        path = ("nodes", node_id, "config")
        edits: dict[Path, Any] = {(*path, key): REMOVE for key in CALCULATE_DROPS if key in spec.config}
        edits[(*path, "form")] = "completion"
        edits[(*path, "prompt")] = "\n".join([*cues, EXPRESSION_CUE])
        edits[(*path, "stop")] = ["\n", "="]
        edits["nodes", calculate] = {
            "type": registry.with_role("tool_call"),
            "description": f"Works out the expression {node_id} writes (added by the optimizer).",
            "inputs": {"expression": str(_answer(plan, node_id))},
            "config": {"tool": "calculator"},
        }
        edits["outputs", output] = str(Ref(calculate, "result"))
        if hop is not None and not _read_elsewhere(plan, hop, output):
            edits["nodes", hop] = REMOVE
        moves.append(
            Move("topology", node_id, f"add {calculate} (write an expression, the calculator works it out)", edits)
        )
    return moves
