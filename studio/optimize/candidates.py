"""Candidates: the input flow plus a set of edits, written back as an ordinary flow file.

An edit sets one value at a path in the flow document (`nodes.classify.config.demos`,
`nodes.reply.model`, `models.default.temperature`). A candidate's text is the input file
with its edits applied through ruamel.yaml's round-trip mode, so comments and key order
survive and the diff against the input shows only what the optimizer changed.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from studio.flow.fmt import dump, round_trip_yaml, yaml_value
from studio.flow.refs import FLOW_INPUTS, Ref, parse_value
from studio.flow.spec import Flow, load_flow_text
from studio.node import Tunable
from studio.runtime import registry
from studio.runtime.compiler import Plan, compile_flow

Path = tuple[str, ...]


@dataclass
class Candidate:
    """One flow the search considers, and what it measured for it on the dev set."""

    id: str
    edits: dict[Path, Any]
    """Every change from the input flow (cumulative over its ancestors)."""
    move: str
    """What this candidate changed relative to its parent, in words."""
    kind: str = "baseline"
    """The move's kind: baseline, demos, instructions, format, form, strategy, model, temperature, topology."""
    parent: str | None = None
    changes: list[str] = field(default_factory=list)
    """Every move from the input flow to this candidate, its ancestors' first."""
    text: str = ""
    plan: Plan | None = field(default=None, repr=False)
    scores: dict[int, float] = field(default_factory=dict)
    """Dev example index → score."""
    runs: dict[int, str] = field(default_factory=dict)
    calls: dict[int, int] = field(default_factory=dict)
    """Dev example index → model calls its run made, cache hits included."""
    tokens: dict[int, int] = field(default_factory=dict)
    cost_usd: dict[int, float] = field(default_factory=dict)
    requests: dict[int, str] = field(default_factory=dict)
    """Dev example index → fingerprint of the prompts its run sent."""
    held_out: dict[int, float] = field(default_factory=dict)
    """Train example index → score, on train examples that break ties on dev (never its demos)."""
    rung: int = 0
    """The last rung of successive halving it was evaluated on."""
    round: int = 0
    accepted: dict[str, Any] | None = None
    """How it replaced the best, when it did: the best it beat, where it was decided (dev or
    held-out train), and the paired comparison (wins, losses, ties, margin, confidence)."""

    @property
    def described(self) -> str:
        """All its changes from the input flow, in words."""
        return "; ".join(self.changes) or self.move

    @property
    def key(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def score_on(self, indices: list[int]) -> float:
        """Mean score over the given dev examples (all must be evaluated)."""
        return sum(self.scores[i] for i in indices) / len(indices) if indices else 0.0

    def held_out_on(self, indices: list[int]) -> float:
        """Mean score over the given train examples (all must be evaluated)."""
        return sum(self.held_out[i] for i in indices) / len(indices) if indices else 0.0

    def shown(self) -> set[str]:
        """Every value its nodes' demos hold: a train example with one of these as input may be a demo."""
        assert self.plan is not None
        values: set[str] = set()
        for planned in self.plan.nodes.values():
            for demo in getattr(planned.node.config, "demos", None) or []:
                values.update(str(value) for value in demo.values())
        return values

    @property
    def examples(self) -> int:
        return len(self.scores)

    @property
    def score(self) -> float:
        return self.score_on(sorted(self.scores))

    @property
    def calls_per_example(self) -> float:
        return sum(self.calls.values()) / len(self.calls) if self.calls else 0.0

    @property
    def typical_calls(self) -> float:
        """Calls of a typical example (the median). A prompt's one-time setup (classify's
        calibration, asked during the first example the prompt runs) raises the mean of a
        candidate that changed the prompt, not the calls an example costs."""
        return statistics.median(self.calls.values()) if self.calls else 0.0

    @property
    def thrift(self) -> tuple[float, float]:
        """What equal scores are decided by, lower first: cost per example, then a typical
        example's calls (never the mean calls, which count one-time setup)."""
        return self.cost_per_example, self.typical_calls

    @property
    def cost_per_example(self) -> float:
        return sum(self.cost_usd.values()) / len(self.cost_usd) if self.cost_usd else 0.0

    @property
    def tokens_per_example(self) -> float:
        return sum(self.tokens.values()) / len(self.tokens) if self.tokens else 0.0

    def row(self) -> dict[str, Any]:
        """The candidate as the report's JSON lists it."""
        return {
            "candidate": self.id,
            "parent": self.parent,
            "kind": self.kind,
            "move": self.move,
            "changes": self.changes,
            "round": self.round,
            "rung": self.rung,
            "examples": self.examples,
            "score": round(self.score, 6),
            "held_out_examples": len(self.held_out),
            "held_out_score": round(self.held_out_on(sorted(self.held_out)), 6) if self.held_out else None,
            "calls_per_example": round(self.calls_per_example, 3),
            "tokens_per_example": round(self.tokens_per_example, 3),
            "cost_per_example": round(self.cost_per_example, 10),
            "accepted": self.accepted,
        }


@dataclass(frozen=True)
class TunableNode:
    """An LLM node whose prompt the search may change, with what it reads and feeds."""

    id: str
    type: str
    config: Mapping[str, Any]
    model: str
    inputs: Mapping[str, Any]
    """Parsed input values (`Ref`s where wires are)."""

    @property
    def surface(self) -> Tunable:
        """What the node type lets the optimizer tune (`Node.tunable`)."""
        surface = _surface(self.type)
        assert surface is not None, self.type
        return surface

    @property
    def port(self) -> str:
        return self.surface.output

    def flow_inputs(self) -> dict[str, str] | None:
        """Template variable → flow input, when every input is read straight from the flow's inputs."""
        mapping = {}
        for name, value in self.inputs.items():
            if not (isinstance(value, Ref) and value.node == FLOW_INPUTS):
                return None
            mapping[name] = value.port
        return mapping


def tunable_nodes(flow: Flow) -> list[TunableNode]:
    """The flow's nodes the search tunes, in file order."""
    found = []
    for node_id, spec in flow.spec.nodes.items():
        if _surface(spec.type) is not None:
            inputs = {name: parse_value(value) for name, value in spec.inputs.items()}
            found.append(TunableNode(node_id, spec.type, dict(spec.config), spec.model or "default", inputs))
    return found


def _surface(node_type: str) -> Tunable | None:
    found = registry.get(node_type)
    return found.tunable if found is not None else None


def answer_source(flow: Flow, output: str) -> tuple[Ref, str | None] | None:
    """The wire a flow output reads its answer from, directly or through one node that only
    reshapes it (`Node.reshapes`, e.g. a `text.template`) whose inputs are all that wire:
    (wire, that node or None)."""
    ref = parse_value(flow.spec.outputs.get(output))
    if not isinstance(ref, Ref):
        return None
    hop = flow.spec.nodes.get(ref.node)
    found = registry.get(hop.type) if hop is not None else None
    if hop is None or found is None or not found.reshapes:
        return ref, None
    wires = [parse_value(v) for v in hop.inputs.values()]
    if not wires or not isinstance(wires[0], Ref) or any(w != wires[0] for w in wires):
        return None
    return wires[0], ref.node


def feeds_output(flow: Flow, node: TunableNode, output: str) -> bool:
    """Whether the flow output reads the node's answer directly, or through one `text.template` hop."""
    source = answer_source(flow, output)
    return source is not None and source[0] == Ref(node.id, node.port)


REMOVE = object()
"""An edit value that deletes the key (back to the node type's default)."""


def combined(edits: Mapping[Path, Any], more: Mapping[Path, Any]) -> dict[Path, Any]:
    """`more` on top of `edits`: its values win, and where it removes a key (a node), the earlier
    edits beneath that key go too, rather than bring back part of what was removed."""
    removed = [path for path, value in more.items() if value is REMOVE]
    kept = {p: v for p, v in edits.items() if not any(len(p) > len(r) and p[: len(r)] == r for r in removed)}
    return {**kept, **more}


def render(base_text: str, edits: Mapping[Path, Any]) -> str:
    """The base flow text with `edits` applied; untouched parts keep their comments and layout."""
    from ruamel.yaml.comments import CommentedMap

    document = round_trip_yaml().load(base_text)
    for path, value in sorted(edits.items()):
        parent = document
        for key in path[:-1]:
            if not isinstance(parent.get(key), dict):
                parent[key] = CommentedMap()
            parent = parent[key]
            if isinstance(parent, CommentedMap):
                parent.fa.set_block_style()
        if value is REMOVE:
            parent.pop(path[-1], None)
        else:
            parent[path[-1]] = yaml_value(value)
    return dump(document)


def sets(candidate: Candidate, parent: Candidate | None) -> dict[str, Any]:
    """What the candidate's move sets on top of its parent, in full: dotted path → value (None where
    it removes the key), for the report (the studio shows a proposed instruction's whole text)."""
    before = parent.edits if parent is not None else {}
    changed = {
        ".".join(path): None if value is REMOVE else value
        for path, value in sorted(candidate.edits.items())
        if path not in before or before[path] != value
    }
    return dict(json.loads(json.dumps(changed, default=str)))


def build(candidate: Candidate, base: Flow, models: Mapping[str, str]) -> Candidate:
    """Fill in the candidate's text and compiled plan; raises FlowError when the edits do not compile."""
    candidate.text = render(base.text, candidate.edits)
    flow = load_flow_text(candidate.text, file=f"{base.file} [a candidate]", path=base.path)
    candidate.plan = compile_flow(flow, models)
    return candidate
