"""Instruction moves: rewrites from the instruction library, and the proposer model's
instructions, written from the bootstrap's failures and successes (none for a node that writes
expressions for a calculator: those answers are numbers)."""

from __future__ import annotations

from typing import Any

from studio.optimize.candidates import TunableNode, feeds_output
from studio.optimize.moves import Move, NodeMoves, rewrite_moves, tunable_only
from studio.optimize.proposers import Dropped, Rewrite, library, proposed
from studio.optimize.sources.base import Offer, Round, Searching


class InstructionSource:
    """Library rewrites and proposed instructions per node; no proposal repeats one raced before."""

    def __init__(self, search: Searching) -> None:
        self.search = search
        self.raced: dict[str, list[str]] = {}
        """Node id → instructions raced for it so far (a new proposal must not repeat one)."""
        self.dropped: list[Dropped] = []
        """Proposals dropped before they were raced, and why."""

    async def prepare(self) -> None:
        """Nothing: proposals are asked each round, from the bootstrap's traces."""

    async def offer(self, round: Round) -> Offer:
        """Each node's rewrites (asked in the flow's order), offered blamed nodes first."""
        rewrites: dict[str, list[Rewrite]] = {}
        for nm in round.nodes:
            if not self.search.writes_expressions(nm.node.id):
                found = library(nm.node, self._expected(nm.node), nm.config)
                rewrites[nm.node.id] = [*found, *await self._proposals(nm.node, nm.config, round.number)]
        moves = []
        for nm in round.ranked():
            mine = NodeMoves(nm.node, nm.config, nm.model, [], [], rewrites.get(nm.node.id, []))
            moves += tunable_only(nm.node, rewrite_moves(mine))
        return Offer(moves=moves)

    def note_raced(self, move: Move) -> None:
        """Remember the instructions a move races, so no later proposal repeats them."""
        for path, value in move.edits.items():
            if path[-1:] == ("instructions",) and move.node and isinstance(value, str):
                self.raced.setdefault(move.node, []).append(value)

    def _expected(self, node: TunableNode) -> list[Any]:
        train, flow = self.search.train, self.search.flow
        fed = [output for output in train.expect if feeds_output(flow, node, output)]
        if len(fed) != 1:
            return []
        return [example.row[train.expect[fed[0]]] for example in train.examples]

    async def _proposals(self, node: TunableNode, config: dict[str, Any], number: int) -> list[Rewrite]:
        s = self.search
        if s.propose is None or not s.traces or not s.affordable(s.proposals):
            return []
        s.emit("propose", message=f"asking the proposer for instructions for {node.id}")
        start = (number - 1) * s.proposals
        raced = self.raced.get(node.id, [])
        rewrites, dropped = await proposed(node, config, s.traces, s.propose, s.proposals, start, raced=raced)
        self.dropped.extend(dropped)
        for item in dropped:
            s.emit("dropped", message=f"dropped a proposal for {node.id}: {item.reason}")
        return rewrites
