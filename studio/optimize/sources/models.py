"""Moves on how a node calls its model: the prompt form, the strategy, a cascade onto a cheaper
alias, another model alias, and each alias' temperature."""

from __future__ import annotations

from studio.flow.spec import ModelSpec
from studio.optimize.moves import (
    cascade_moves,
    form_moves,
    model_moves,
    strategy_moves,
    temperature_moves,
    tunable_only,
)
from studio.optimize.sources.base import FromBestFlow, Offer, Round

SPECIAL_ALIASES = ("judge", "proposer")
"""Aliases that serve the optimizer, never a node."""


class ModelSource(FromBestFlow):
    """Form, strategy, cascade and model moves per node; temperature moves per alias in use."""

    async def offer(self, round: Round) -> Offer:
        """Per node (blamed first): form, strategy, cascade and model moves; then temperatures."""
        plan = self.search.best.plan
        assert plan is not None
        aliases = [a for a in plan.models if a not in (self.search.proposer_alias, *SPECIAL_ALIASES)]
        prices = {alias: price(plan.models[alias]) for alias in aliases}
        moves = []
        for nm in round.ranked():
            made = [*form_moves(nm), *strategy_moves(nm), *cascade_moves(nm, prices), *model_moves(nm, aliases)]
            moves += tunable_only(nm.node, made)
        for alias in sorted({nm.model for nm in round.nodes}):
            moves += temperature_moves(alias, plan.models[alias].temperature if alias in plan.models else None)
        return Offer(moves=moves)


def price(spec: ModelSpec) -> float | None:
    """USD per 1,000 tokens in plus 1,000 out (None: unknown), to tell a dear alias from a cheap one."""
    from studio.models.check import prices

    given = prices(spec)
    return None if None in given else sum(p or 0.0 for p in given)
