"""The search: rounds of moves from the best flow so far, each round a successive-halving race.

1. The input flow (the baseline) is evaluated on the whole dev set: the "before" score, and
   the reference every candidate is paired with.
2. It runs on a sample of the train set; those traces give bootstrapped demos and the
   failures and successes the proposer model reflects on.
3. Each round makes moves from the current best (see `moves`) and races them: every alive
   candidate runs on the same minibatch of dev examples (paired with the best, whose scores
   on those examples are already known), the top third that at least tie the best go on to a
   minibatch twice as large (nested, so no example runs twice), and so on up to the whole
   dev set, where a candidate must beat the best to replace it. Moves that held up in a
   round are tried again on top of the next best, so good edits of different kinds combine.
   A tie on all of dev (a small or saturated dev set cannot tell them apart) is broken on the
   train examples that neither shows as a demo: the challenger must beat the best there.
4. Every evaluation is checked against the budget before it starts (calls per example
   measured so far, scaled by the strategy's call count); the meter enforces the limit
   regardless, and an evaluation cut short by it is discarded, never scored.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise
from typing import Any

from studio.errors import FlowError
from studio.evaluate.datasets import Dataset, Example
from studio.flow.spec import Flow
from studio.optimize import demos as demo_pools
from studio.optimize.candidates import Candidate, build, combined, tunable_nodes
from studio.optimize.culprits import culprits
from studio.optimize.demo_search import Searched
from studio.optimize.demos import Trace
from studio.optimize.evaluator import BudgetSpent, Evaluated, Evaluator, NothingSucceeds
from studio.optimize.joint import JointPool
from studio.optimize.meter import Meter
from studio.optimize.moves import Move, NodeMoves, interleave
from studio.optimize.paired import compare
from studio.optimize.proposers import Dropped
from studio.optimize.sources.base import Ask, MoveSource, Round
from studio.optimize.sources.demos import DemoSource
from studio.optimize.sources.instructions import InstructionSource
from studio.optimize.sources.models import ModelSource
from studio.optimize.sources.topology import TopologySource
from studio.optimize.topology import CALCULATE_SUFFIX, numeric_outputs
from studio.runtime.compiler import Plan

Progress = Callable[..., None]
"""Called as progress(event=, best=, alive=, calls=, cost_usd=, message=, **future_kwargs)."""
PERFECT = 1.0 - 1e-9
"""A best dev score no candidate can beat."""
ANSWER_KINDS = ("demos", "instructions", "format")
"""Move kinds made from a node's answers (demos, instructions, output format): none fit an expression writer."""


@dataclass
class Settings:
    """How the search spends its budget."""

    minibatch: int = 8
    """Dev examples in the first rung of each race."""
    eta: int = 3
    """Each rung keeps the best 1/eta of the candidates."""
    width: int = 10
    """Candidates raced per round."""
    max_rounds: int = 8
    bootstrap: int = 16
    """Train examples run to bootstrap demos (fewer when the budget is small)."""
    proposals: int = 2
    """Instructions asked of the proposer model per node and round."""
    tie_breaks: int = 2
    """Candidates per round that tie the best on all of dev and are then run on held-out train examples."""
    seed: int = 0


def calls_per_example(plan: Plan) -> float:
    """Model calls one example needs, as the nodes declare them (sub-flows not counted)."""
    return sum(planned.node.model_calls() for planned in plan.nodes.values())


def overhead_calls(plan: Plan) -> int:
    """Calls a freshly compiled flow makes once, as the nodes declare them (classify's calibration)."""
    total = 0
    for planned in plan.nodes.values():
        model = plan.models[planned.model].model if planned.model else ""
        total += planned.node.setup_calls(model)
    return total


def rung_sizes(minibatch: int, total: int) -> list[int]:
    """Nested minibatch sizes: minibatch, twice that, … and finally the whole set."""
    sizes, size = [], max(1, minibatch)
    while size < total:
        sizes.append(size)
        size *= 2
    return [*sizes, total]


def ranking(candidates: list[Candidate], subset: list[int]) -> list[Candidate]:
    """Candidates by score on `subset`; ties go to the thriftier (`Candidate.thrift`), then to the
    earlier in the move order."""
    return sorted(candidates, key=lambda c: (-c.score_on(subset), *c.thrift))


def going_on(ranked: list[Candidate], best: Candidate, subset: list[int], eta: int) -> list[Candidate]:
    """The candidates a rung sends on: the top 1/eta of those ranked, less any that lost to the best
    on `subset` by more than one example's worth (a one-example loss is a tie, as a one-example win is)."""
    holding = [c for c in ranked if compare(c.scores, best.scores, subset).holds]
    return holding[: max(1, math.ceil(len(ranked) / eta))]


class Search:
    """One optimization: its candidates, the best so far, and why it stopped."""

    def __init__(
        self,
        *,
        flow: Flow,
        plan: Plan,
        train: Dataset,
        dev: Dataset,
        evaluator: Evaluator,
        meter: Meter,
        models: Mapping[str, str],
        settings: Settings,
        propose: Ask | None = None,
        proposer_alias: str | None = None,
        progress: Progress | None = None,
        on_best: Callable[[Candidate], None] | None = None,
    ) -> None:
        self.flow, self.plan, self.train, self.dev = flow, plan, train, dev
        self.evaluator, self.meter, self.models, self.settings = evaluator, meter, dict(models), settings
        self.propose, self.proposer_alias = propose, proposer_alias
        self.progress, self.on_best = progress, on_best
        self.rng = random.Random(settings.seed)
        self.candidates: list[Candidate] = []
        self.seen: set[str] = set()
        self.promising: list[Move] = []
        self.stopped = ""
        self.touched: dict[str, str | None] = {}
        """Candidate id → the node its move changed (None: a model alias or the graph)."""
        self.blamed: dict[str, int] = {}
        """Node id → how many failing bootstrap runs blame put on it; its moves are tried first."""
        self.best = Candidate("c0", {}, "the flow as given", text=flow.text, plan=plan)
        self.first_raced = False
        """Whether a round has raced yet: until then the phases before it leave its price (`spare`)."""
        self.demos = DemoSource(self)
        self.instructions = InstructionSource(self)
        self.sources: list[MoveSource] = [self.demos, self.instructions, ModelSource(self), TopologySource(self)]
        """Where each round's moves come from, in the order their offers are interleaved."""

    @property
    def traces(self) -> list[Trace]:
        """The bootstrap's runs of the input flow on train examples."""
        return self.demos.traces

    @property
    def searched(self) -> Searched | None:
        """Searched demos of the inner nodes, when the flow has such nodes."""
        return self.demos.searched

    @property
    def joint(self) -> JointPool | None:
        """Good runs that give every tunable node its demos at once, on multi-node flows."""
        return self.demos.joint

    @property
    def dropped(self) -> list[Dropped]:
        """Proposals dropped before they were raced, and why."""
        return self.instructions.dropped

    @property
    def proposals(self) -> int:
        """Instructions asked of the proposer model per node and round."""
        return self.settings.proposals

    @property
    def bootstrap(self) -> int:
        """Train examples the bootstrap runs at most."""
        return self.settings.bootstrap

    @property
    def failing(self) -> list[tuple[Example, str]]:
        """Bootstrap runs that scored below 1 (example, run id): what blame and the demo search look at."""
        return [(t.example, t.run_id) for t in self.traces if t.run_id and t.score < 1]

    @cached_property
    def numeric(self) -> list[str]:
        """Flow outputs every train answer is a number for (where the calculate move is offered)."""
        return numeric_outputs(self.train)

    # -- budget ------------------------------------------------------------------------------

    def per_example(self, candidate: Candidate) -> float:
        """Calls one more example of this candidate costs: measured, else the best's scaled by strategy."""
        if candidate.calls:
            return candidate.calls_per_example
        assert candidate.plan is not None and self.best.plan is not None
        measured = self.best.calls_per_example or calls_per_example(self.best.plan)
        return measured * calls_per_example(candidate.plan) / max(calls_per_example(self.best.plan), 1.0)

    def estimate(self, candidate: Candidate, examples: int) -> int:
        """Calls an evaluation of `examples` new examples will make at most (an estimate)."""
        if not examples:
            return 0
        assert candidate.plan is not None
        once = 0 if candidate.calls else overhead_calls(candidate.plan)
        return math.ceil(self.per_example(candidate) * examples) + once

    def race_cost(self, candidates: list[Candidate]) -> int:
        """Calls a race costs when the top 1/eta go on at every rung and the last ones reach all of dev.

        The ones that go on are priced as the dearest per example: any of them may lead, and a
        race priced at the mean could afford the cheap candidates' later rungs but not the
        leader's (which then stops short of dev while a worse, cheaper one reaches it)."""
        sizes = rung_sizes(self.settings.minibatch, len(self.dev.examples))
        total = sum(self.estimate(c, sizes[0]) for c in candidates)
        dearest = max((self.per_example(c) for c in candidates), default=0.0)
        alive = len(candidates)
        for before, size in pairwise(sizes):
            alive = math.ceil(alive / self.settings.eta)
            total += math.ceil(alive * dearest * (size - before))
        return total

    def spare(self) -> int | None:
        """Calls the phases before the first race may share (None: no call limit): what is left less
        that race's price, its proposals and one candidate on all of dev, so a budget `prepare`
        accepts (`first_race_calls`) always tries a candidate."""
        remaining = self.meter.remaining
        if remaining is None or self.first_raced:
            return remaining
        assert self.best.plan is not None
        asks = self.settings.proposals * len(tunable_nodes(self.flow)) if self.proposer_alias else 0
        return max(0, remaining - self.race_cost([self.best]) - overhead_calls(self.best.plan) - asks)

    def affordable(self, calls: int) -> bool:
        remaining = self.meter.remaining
        if remaining is not None and calls > remaining:
            return False
        if self.meter.max_cost_usd is not None and self.best.calls_per_example:
            per_call = sum(self.best.cost_usd.values()) / max(sum(self.best.calls.values()), 1)
            return self.meter.cost_usd + per_call * calls <= self.meter.max_cost_usd
        return True

    # -- phases ------------------------------------------------------------------------------

    async def run(self) -> Candidate:
        """Search until the budget, the moves or the rounds run out; returns the best candidate."""
        self._add(self.best)
        first = list(range(min(self.settings.minibatch, len(self.dev.examples))))
        self._check_alive(await self._evaluate(self.best, first))
        await self._evaluate(self.best, list(range(len(self.dev.examples))))
        self.best.rung = len(rung_sizes(self.settings.minibatch, len(self.dev.examples))) - 1
        self._new_best(self.best)
        try:
            for source in self.sources:
                await source.prepare()
            self.blamed.update(await culprits(self, self.searched))
            for number in range(1, self.settings.max_rounds + 1):
                if await self._perfect():
                    self.stopped = "the score is perfect on dev and on the held-out train examples"
                    break
                if not await self._round(number):
                    break
        except BudgetSpent:
            self.stopped = "the budget is spent"
        if not self.stopped:
            self.stopped = f"{self.settings.max_rounds} rounds done"
        self.emit("finished", message=f"search stopped: {self.stopped}")
        return self.best

    def _check_alive(self, results: list[Evaluated]) -> None:
        """Stop before spending the budget when no run of the first minibatch succeeds."""
        failed = [done for done in results if done.result.outcome.status != "succeeded"]
        if not results or len(failed) < len(results):
            return
        first = failed[0]
        raise NothingSucceeds(
            f"all {len(results)} runs of the first dev minibatch failed, so the search stopped; "
            f"the first error ({self.dev.path} row {first.example.line}): {first.result.outcome.error}"
        )

    async def _evaluate(self, candidate: Candidate, indices: list[int]) -> list[Evaluated]:
        assert candidate.plan is not None
        todo = [i for i in indices if i not in candidate.scores]
        results = await self.evaluator.run(candidate.plan, [self.dev.examples[i] for i in todo])
        for index, done in zip(todo, results, strict=True):
            candidate.scores[index] = done.score
            candidate.calls[index] = done.calls
            candidate.tokens[index] = done.tokens
            candidate.cost_usd[index] = done.cost_usd
            candidate.requests[index] = done.requests
            if done.result.outcome.run_id:
                candidate.runs[index] = done.result.outcome.run_id
        self.emit("evaluated", candidate=candidate.id, examples=candidate.examples)
        return results

    async def _round(self, number: int) -> bool:
        """One round; False when there is nothing left to try."""
        carried = [m for m in self.promising if m.kind not in ANSWER_KINDS or not self.writes_expressions(m.node)]
        moves = [*carried, *await self._moves(number)]
        self.promising = []
        racing: list[tuple[Candidate, Move]] = []
        keys: set[str] = set()
        for move in moves:
            if len(racing) == self.settings.width:
                break
            candidate = self._candidate(move, number)
            if candidate is not None and candidate.key not in keys:
                keys.add(candidate.key)
                racing.append((candidate, move))
        if not racing:
            self.stopped = "every move has been tried"
            return False
        while len(racing) > 1 and not self.affordable(self.race_cost([c for c, _ in racing])):
            racing.remove(self._dearest(racing))  # a narrower race, whose finalists can still reach all of dev
        if not self.affordable(self.race_cost([racing[0][0]])):
            self.stopped = "the budget left is too small for another race"
            return False
        self.first_raced = True
        for candidate, move in racing:
            candidate.id = f"c{len(self.candidates)}"
            self._add(candidate)
            self.instructions.note_raced(move)
        self.emit(
            "round",
            message=f"round {number}: racing {len(racing)} candidate{'s' if len(racing) != 1 else ''}",
            alive=len(racing),
        )
        winners, tied = await self._race(racing)
        if not winners and tied:
            winners = await self._tie_break(tied)
        if winners:
            best = min(winners, key=lambda c: (-c.score, *c.thrift))
            self._new_best(best)
        return True

    def _dearest(self, racing: list[tuple[Candidate, Move]]) -> tuple[Candidate, Move]:
        """The candidate to leave out of a race too dear for the budget: the one whose first rung
        costs most (an ensemble's samples), the latest in the move order among equals."""
        return max(reversed(racing), key=lambda pair: self.estimate(pair[0], self.settings.minibatch))

    async def _race(self, racing: list[tuple[Candidate, Move]]) -> tuple[list[Candidate], list[Candidate]]:
        """Successive halving over nested minibatches; the candidates that beat the best on all of
        dev, and those that tie it there."""
        order = self.rng.sample(range(len(self.dev.examples)), len(self.dev.examples))
        sizes = rung_sizes(self.settings.minibatch, len(order))
        alive = [candidate for candidate, _ in racing]
        moves = {candidate.id: move for candidate, move in racing}
        for rung, size in enumerate(sizes):
            subset = order[:size]
            evaluated = []
            for candidate in alive:
                need = sum(1 for i in subset if i not in candidate.scores)
                if not self.affordable(self.estimate(candidate, need)):
                    continue
                await self._evaluate(candidate, subset)
                candidate.rung = rung
                evaluated.append(candidate)
            ranked = ranking([c for c in evaluated if not self._same_prompts(c, subset)], subset)
            if size == len(order):
                return self._decided(ranked, subset)
            if rung == 0:
                reference = self.best.score_on(subset)
                self.promising = [moves[c.id] for c in ranked if c.score_on(subset) > reference]
            alive = going_on(ranked, self.best, subset, self.settings.eta)
            self.emit("rung", message=f"rung {rung + 1}: {len(alive)} of {len(ranked)} go on", alive=len(alive))
            if not alive:
                return [], []
        return [], []

    def _decided(self, ranked: list[Candidate], subset: list[int]) -> tuple[list[Candidate], list[Candidate]]:
        """The candidates that beat the best on all of dev by a margin it resolves (more than one
        example's worth), and those that tie it or win by too little (broken on held-out train)."""
        winners, tied = [], []
        for candidate in ranked:
            comparison = compare(candidate.scores, self.best.scores, subset)
            if comparison.resolved_win:
                candidate.accepted = {"versus": self.best.id, "decided_on": "dev", **comparison.as_json()}
                winners.append(candidate)
            elif comparison.at_least_tie:
                tied.append(candidate)
        return winners, tied

    async def _tie_break(self, tied: list[Candidate]) -> list[Candidate]:
        """The first tied candidate that beats the best on the train examples neither shows as a demo."""
        best_rows = set(self._held_out(self.best))
        for candidate in tied[: self.settings.tie_breaks]:
            rows = sorted(best_rows.intersection(self._held_out(candidate)))
            if len(rows) < self.settings.minibatch:
                continue  # too few to tell them apart
            need = sum(self.estimate(c, sum(i not in c.held_out for i in rows)) for c in (self.best, candidate))
            if not self.affordable(need):
                break
            self.emit("tie", message=f"{candidate.id} ties the best on dev: both run on {len(rows)} train examples")
            for side in (self.best, candidate):
                await self._evaluate_held_out(side, rows)
            comparison = compare(candidate.held_out, self.best.held_out, rows)
            if comparison.margin > 1e-9:
                candidate.accepted = {"versus": self.best.id, "decided_on": "held-out train", **comparison.as_json()}
                return [candidate]
        return []

    async def _perfect(self) -> bool:
        """Whether no candidate can beat the best: perfect on dev and on the train examples a tie
        would be broken on (run now, when it is perfect on dev), or too few of those to tell."""
        if self.best.score < PERFECT:
            return False
        rows = self._held_out(self.best)
        if len(rows) < self.settings.minibatch:
            return True
        await self._evaluate_held_out(self.best, rows)
        return self.best.held_out_on(rows) >= PERFECT

    def _held_out(self, candidate: Candidate) -> list[int]:
        """Train examples none of whose inputs the candidate's demos hold."""
        return [e.index for e in demo_pools.unseen(self.train, candidate.shown())]

    async def _evaluate_held_out(self, candidate: Candidate, indices: list[int]) -> None:
        assert candidate.plan is not None
        todo = [self.train.examples[i] for i in indices if i not in candidate.held_out]
        for done in await self.evaluator.run(candidate.plan, todo):
            candidate.held_out[done.example.index] = done.score

    def _same_prompts(self, candidate: Candidate, subset: list[int]) -> bool:
        """Whether the candidate sent the best's prompts (a move without effect, dropped at once).

        One example may differ: a freshly compiled classify node asks its calibration calls
        during its first example, which need not be the one where the best asked them. A topology
        move can change the outputs without changing a prompt (a tidy step), so it is never dropped.
        """
        if candidate.kind == "topology":
            return False
        differ = sum(candidate.requests.get(i) != self.best.requests.get(i) for i in subset)
        return len(subset) >= 3 and differ <= 1

    # -- moves -------------------------------------------------------------------------------

    async def _moves(self, number: int) -> list[Move]:
        """Every source's offer for this round, interleaved by kind (`moves.interleave`)."""
        assert self.best.plan is not None
        nodes = []
        for node in tunable_nodes(self.flow):
            if node.id not in self.best.plan.nodes:
                continue  # a topology move removed it
            config = self.best.plan.nodes[node.id].node.config.model_dump()
            nodes.append(NodeMoves(node, config, self.best.plan.nodes[node.id].model or "default", [], [], []))
        round = Round(number, nodes, self.blamed)
        offers = [await source.offer(round) for source in self.sources]
        return interleave((o.lead for o in offers), (o.moves for o in offers))

    def writes_expressions(self, node: str | None) -> bool:
        """Whether the node writes expressions for a calculator in the best flow: the train answers
        and traces show numbers, so no demo, instruction or format move (library or proposer, both
        made from those answers) fits it; its form, strategy and model are still tuned."""
        assert self.best.plan is not None
        return node is not None and f"{node}{CALCULATE_SUFFIX}" in self.best.plan.nodes

    def _candidate(self, move: Move, number: int) -> Candidate | None:
        candidate = Candidate(
            f"c{len(self.candidates)}",
            combined(self.best.edits, move.edits),
            move.label,
            kind=move.kind,
            parent=self.best.id,
            changes=[*self.best.changes, move.label],
            round=number,
        )
        try:
            build(candidate, self.flow, self.models)
        except FlowError:
            return None  # a move the flow does not accept (e.g. a form the node lacks): not a candidate
        self.touched[candidate.id] = move.node
        return None if candidate.key in self.seen else candidate

    def _add(self, candidate: Candidate) -> None:
        self.candidates.append(candidate)
        self.seen.add(candidate.key)

    def _new_best(self, candidate: Candidate) -> None:
        self.best = candidate
        if self.on_best is not None:
            self.on_best(candidate)
        self.emit("best", message=f"best: {candidate.id} scores {candidate.score:.3f} on dev ({candidate.described})")

    def emit(self, event: str, **details: Any) -> None:
        """Report progress: the event, the best so far and what has been spent."""
        if self.progress is None:
            return
        details.setdefault("alive", None)
        self.progress(
            event=event,
            best=self.best.score if self.best.scores else None,
            best_id=self.best.id,
            calls=self.meter.calls,
            cost_usd=self.meter.cost_usd,
            **details,
        )
