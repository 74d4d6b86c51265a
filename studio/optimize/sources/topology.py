"""Topology moves: nodes added to or removed from the best flow's graph (`optimize.topology`)."""

from __future__ import annotations

from studio.optimize.sources.base import Offer, Round, Searching
from studio.optimize.topology import topology_moves


class TopologySource:
    """The graph's add and remove moves from the best flow so far."""

    def __init__(self, search: Searching) -> None:
        self.search = search

    async def prepare(self) -> None:
        """Nothing: these moves need only the best flow and the train answers."""

    async def offer(self, round: Round) -> Offer:
        """Add and remove moves of the best flow's graph."""
        plan = self.search.best.plan
        assert plan is not None
        return Offer(moves=list(topology_moves(plan, self.search.numeric)))
