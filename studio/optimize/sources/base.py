"""The protocol a move source implements, and what it may read of the search."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from studio.evaluate.datasets import Dataset
from studio.flow.spec import Flow
from studio.optimize.candidates import Candidate
from studio.optimize.demos import Trace
from studio.optimize.evaluator import Evaluator
from studio.optimize.meter import Meter
from studio.optimize.moves import Move, NodeMoves

Ask = Callable[[str], Awaitable[str | None]]
"""The proposer model: a prompt in, its reply out (None when it gave none)."""


class Searching(Protocol):
    """What a move source reads of the search it serves (`search.Search`); the search gives each
    source itself, so a source sees the best flow and the budget as they are now."""

    flow: Flow
    train: Dataset
    evaluator: Evaluator
    meter: Meter
    models: dict[str, str]
    rng: random.Random
    best: Candidate
    propose: Ask | None
    proposer_alias: str | None

    @property
    def bootstrap(self) -> int:
        """Train examples the bootstrap runs at most."""
        ...

    @property
    def proposals(self) -> int:
        """Instructions asked of the proposer per node and round."""
        ...

    @property
    def traces(self) -> list[Trace]:
        """The bootstrap's runs of the input flow on train examples."""
        ...

    @property
    def failing(self) -> list[tuple[Any, str]]:
        """Bootstrap runs that scored below 1 (example, run id)."""
        ...

    @property
    def numeric(self) -> list[str]:
        """Flow outputs every train answer is a number for."""
        ...

    def spare(self) -> int | None:
        """Calls the phases before the first race may share (None: no call limit)."""
        ...

    def affordable(self, calls: int) -> bool:
        """Whether `calls` more calls fit the budget."""
        ...

    def emit(self, event: str, **details: Any) -> None:
        """Report progress."""
        ...

    def writes_expressions(self, node: str | None) -> bool:
        """Whether the node writes expressions for a calculator in the best flow."""
        ...


@dataclass
class Round:
    """What every source's offer is made from: the round's number and the best flow's nodes."""

    number: int
    nodes: list[NodeMoves]
    """The tunable nodes of the best flow, in the flow's order, each with its config and alias."""
    blamed: Mapping[str, int] = field(default_factory=dict)
    """Node id → failing runs blamed on it: those nodes' moves go first."""

    def ranked(self) -> list[NodeMoves]:
        """The nodes with the most blamed first (the flow's order among equals)."""
        return sorted(self.nodes, key=lambda nm: -self.blamed.get(nm.node.id, 0))


@dataclass
class Offer:
    """A source's moves for one round."""

    lead: list[Move] = field(default_factory=list)
    """Moves raced before every interleaved one (joint demos, the first searched demos)."""
    moves: list[Move] = field(default_factory=list)
    """Moves interleaved with the other sources' by kind, each kind in the order given."""


class MoveSource(Protocol):
    """One source of moves."""

    async def prepare(self) -> None:
        """Learn what the moves need before the first round (may spend budget); most need nothing."""
        ...

    async def offer(self, round: Round) -> Offer:
        """The moves of this round, made from the best flow so far."""
        ...


class FromBestFlow:
    """A source whose moves need only the best flow so far: nothing to prepare."""

    def __init__(self, search: Searching) -> None:
        self.search = search

    async def prepare(self) -> None:
        """Nothing to learn before the first round."""
