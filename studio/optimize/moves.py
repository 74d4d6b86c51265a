"""The moves a round of search tries: each one edits the current best flow in one way.

Per tunable node: demos (how many, which, in what order; bootstrapped, labelled or searched), instructions
(the rewrite library and the proposer's), the output format (label list, stop sequence), the
prompt form (chat or completion), the strategy, and the model alias; per model alias, its
temperature; for the graph, adding or removing a node (see `topology`). Moves of different kinds
are interleaved, so a round with a small width still tries a bit of everything.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

from studio.optimize.candidates import REMOVE, Path, TunableNode
from studio.optimize.demos import pick
from studio.optimize.proposers import Rewrite

KINDS = ("demos", "instructions", "format", "form", "model", "strategy", "temperature", "topology")
"""Interleaving order: cheap, often decisive moves first; extra calls (strategy), sampling noise and
changes to the graph last."""
DEMO_SIZES = (2, 4, 8)
STRATEGIES: tuple[tuple[str, int], ...] = (("ensemble", 3), ("reasoning", 1), ("reflect", 1))


@dataclass(frozen=True)
class Move:
    """Edits to apply on top of a candidate, described for the report."""

    kind: str
    node: str | None
    """The node it changes (`a+b` for a joint move on sibling nodes); None: a model alias or the graph."""
    description: str
    edits: Mapping[Path, Any]

    @property
    def label(self) -> str:
        return f"{self.node}: {self.description}" if self.node else self.description


@dataclass
class NodeMoves:
    """What the search knows about one node when it makes moves for it."""

    node: TunableNode
    config: dict[str, Any]
    """The node's config in the current best flow."""
    model: str
    bootstrapped: list[dict[str, Any]]
    labelled: list[dict[str, Any]]
    rewrites: list[Rewrite]


def config_path(node: str, name: str) -> Path:
    return ("nodes", node, "config", name)


def demo_sizes(node: TunableNode) -> tuple[int, ...]:
    """Demo counts in the order to try them: a classify node with 3 to 8 labels starts with one demo
    per label (a few-shot prompt that shows every label once), then the usual sizes."""
    labels = len(node.config.get("labels") or []) if node.surface.labels else 0
    first = (labels,) if DEMO_SIZES[0] < labels <= DEMO_SIZES[-1] else ()
    return (*first, *(size for size in DEMO_SIZES if size not in first))


def demo_moves(nm: NodeMoves, rng: random.Random) -> list[Move]:
    node = nm.node.id
    moves = []
    sizes = demo_sizes(nm.node)
    for size in sizes:
        for source, pool in (("bootstrapped", nm.bootstrapped), ("labelled", nm.labelled)):
            if len(pool) >= min(size, 2) and (size == sizes[0] or len(pool) > size // 2):
                demos = pick(pool, size, rng, nm.node.port)
                moves.append(Move("demos", node, f"{len(demos)} {source} demos", {config_path(node, "demos"): demos}))
    current = list(nm.config.get("demos") or [])
    if len(current) > 1:
        shuffled = rng.sample(current, len(current))
        moves.append(Move("demos", node, "demos reordered", {config_path(node, "demos"): shuffled}))
    if current:
        moves.append(Move("demos", node, "no demos", {config_path(node, "demos"): REMOVE}))
    return moves


SEARCHED_FIRST = 2
"""Searched demo moves placed before every other move of a round."""
SEARCHED_SIZES = ((2, 2), (4, 1))
"""Searched demo sets raced per group: (demos, draws); several 2-demo draws, as DSPy's random search
scores several demo sets."""


def searched_moves(
    group: Sequence[str], pools: Sequence[Sequence[Mapping[str, Any]]], rng: random.Random
) -> list[Move]:
    """Demo moves of the third source, searched demos (`demo_search`): each sets the demos of every
    node of a sibling group at once, from the same train examples, so a joint answer (two factors
    of a product) is shown whole; the move's node is the group's ids joined by `+`. `pools` holds
    one pool per way of resolving ambiguous examples. Order: the first draw of each size (each
    way), then the other draws, then the same draws with the demos the right re-runs give the
    tunable nodes downstream ("and downstream")."""
    joint = "+".join(group)
    made: list[tuple[tuple[int, int, int, int], Move]] = []
    for rank, (size, draws) in enumerate(SEARCHED_SIZES):
        for number, pool in enumerate(pools):
            if not pool or (rank and len(pool) <= SEARCHED_SIZES[rank - 1][0]):
                continue  # a larger size only where the pool holds more than the smaller one
            for draw in range(draws if len(pool) > size else 1):
                chosen = rng.sample(list(pool), min(size, len(pool)))
                other = " (other order)" if number else ""
                again = f" (draw {draw + 1})" if draw else ""
                description = f"{len(chosen)} searched demos{other}{again}"
                below = sorted({node for demos in chosen for node in demos} - set(group))
                for downstream, nodes in enumerate((list(group), [*group, *below])):
                    if downstream and not below:
                        continue
                    full = [node for node in nodes if all(node in demos for demos in chosen)]
                    edits = {config_path(node, "demos"): [demos[node] for demos in chosen] for node in full}
                    more = " (and downstream)" if downstream else ""
                    made.append(((downstream, draw, rank, number), Move("demos", joint, description + more, edits)))
    return [move for _, move in sorted(made, key=lambda pair: pair[0])]


def rewrite_moves(nm: NodeMoves) -> list[Move]:
    node = nm.node.id
    moves = []
    for rewrite in nm.rewrites:
        if all(nm.config.get(k) == v for k, v in rewrite.config.items()):
            continue
        edits = {config_path(node, k): v for k, v in rewrite.config.items()}
        moves.append(Move(rewrite.kind, node, rewrite.description, edits))
    return moves


def form_moves(nm: NodeMoves) -> list[Move]:
    default = nm.node.surface.default_form
    other = "chat" if nm.config.get("form", default) == "completion" else "completion"
    return [Move("form", nm.node.id, f"form: {other}", {config_path(nm.node.id, "form"): other})]


def strategy_moves(nm: NodeMoves) -> list[Move]:
    node = nm.node.id
    current = nm.config.get("strategy", "single")
    moves = []
    for strategy, samples in (("single", 1), *STRATEGIES):
        if strategy == current or strategy not in nm.node.surface.strategies:
            continue
        edits: dict[Path, Any] = {config_path(node, "strategy"): strategy}
        if strategy == "ensemble":
            edits[config_path(node, "samples")] = samples
        name = f"strategy: {strategy}" + (f" ({samples} samples)" if strategy == "ensemble" else "")
        moves.append(Move("strategy", node, name, edits))
    return moves


CASCADE_SAMPLES, CASCADE_AGREE = 3, 2
"""A proposed cascade's student samples and how many must agree."""


def cascade_moves(nm: NodeMoves, prices: Mapping[str, float | None]) -> list[Move]:
    """A cascade for a node on an expensive alias: each cheaper alias (by `prices`, USD per 1,000
    tokens in and out) answers as the student, the node's own alias as the teacher when unsure."""
    own = prices.get(nm.model)
    if own is None or nm.config.get("strategy") == "cascade" or "teacher" not in nm.node.surface.fields:
        return []
    node = nm.node.id
    moves = []
    for alias, price in sorted(prices.items(), key=lambda pair: (pair[1] or 0.0, pair[0])):
        if alias == nm.model or price is None or price >= own:
            continue
        edits: dict[Path, Any] = {
            ("nodes", node, "model"): alias,
            config_path(node, "strategy"): "cascade",
            config_path(node, "teacher"): nm.model,
            config_path(node, "samples"): CASCADE_SAMPLES,
            config_path(node, "agree"): CASCADE_AGREE,
        }
        moves.append(Move("strategy", node, f"cascade: {alias} answers, {nm.model} when it is unsure", edits))
    return moves


def model_moves(nm: NodeMoves, aliases: list[str]) -> list[Move]:
    return [
        Move("model", nm.node.id, f"model: {alias}", {("nodes", nm.node.id, "model"): alias})
        for alias in aliases
        if alias != nm.model
    ]


def temperature_moves(alias: str, current: float | None) -> list[Move]:
    choices = [0.0, 0.7]
    return [
        Move("temperature", None, f"{alias}: temperature {t}", {("models", alias, "temperature"): t})
        for t in choices
        if (current or 0.0) != t
    ]


def tunable_only(node: TunableNode, moves: Iterable[Move]) -> list[Move]:
    """The moves whose every config field is one the node type lets the optimizer edit."""
    return [m for m in moves if all(p[2] != "config" or p[3] in node.surface.fields for p in m.edits if len(p) > 3)]


def interleave(leads: Iterable[Sequence[Move]], offered: Iterable[Sequence[Move]]) -> list[Move]:
    """A round's moves: the sources' lead moves (joint demos, the first searched demos), then every
    other move interleaved across `KINDS` (one of each kind in turn), each kind in the order offered."""
    by_kind: dict[str, list[Move]] = {kind: [] for kind in KINDS}
    for moves in offered:
        for move in moves:
            by_kind[move.kind].append(move)
    interleaved = zip_longest(*(by_kind[kind] for kind in KINDS))
    return [*(m for lead in leads for m in lead), *(m for group in interleaved for m in group if m is not None)]
