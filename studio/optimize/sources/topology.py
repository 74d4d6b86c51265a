"""Topology moves: nodes added to or removed from the best flow's graph (`optimize.topology`)."""

from __future__ import annotations

from studio.optimize.sources.base import FromBestFlow, Offer, Round
from studio.optimize.topology import topology_moves


class TopologySource(FromBestFlow):
    """The graph's add and remove moves from the best flow so far."""

    async def offer(self, round: Round) -> Offer:
        """Add and remove moves of the best flow's graph."""
        plan = self.search.best.plan
        assert plan is not None
        return Offer(moves=list(topology_moves(plan, self.search.numeric)))
