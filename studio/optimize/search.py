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
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise
from typing import Any

from studio.errors import FlowError
from studio.evaluate.blame import BlameOptions, Score, blame_run
from studio.evaluate.datasets import Dataset, Example
from studio.evaluate.metrics import Metric, MetricError
from studio.flow.spec import Flow, ModelSpec
from studio.optimize import demos as demo_pools
from studio.optimize import joint
from studio.optimize.candidates import Candidate, TunableNode, build, combined, feeds_output, tunable_nodes
from studio.optimize.demos import Trace
from studio.optimize.evaluate import BudgetSpent, Evaluated, Evaluator, NothingSucceeds
from studio.optimize.meter import Meter
from studio.optimize.moves import Move, NodeMoves, round_moves, searched_moves
from studio.optimize.paired import compare
from studio.optimize.proposers import Dropped, Rewrite, library, proposed
from studio.optimize.searched import DemoSearch, Searched, searchable
from studio.optimize.topology import CALCULATE_SUFFIX, numeric_outputs, topology_moves
from studio.reviews.dataset import reviewer_blamed
from studio.runtime.compiler import Plan

Progress = Callable[..., None]
"""Called as progress(event=, best=, alive=, calls=, cost_usd=, message=, **future_kwargs)."""
Ask = Callable[[str], Awaitable[str | None]]
PERFECT = 1.0 - 1e-9
"""A best dev score no candidate can beat."""
ANSWER_KINDS = ("demos", "instructions", "format")
BLAME_RUNS = 4
"""Failing bootstrap runs blamed before the first round (flows with several tunable nodes)."""
BLAME_SAMPLES = 2
"""Re-samples per candidate node and run (doubled when none flips)."""
BLAME_CALLS = 120
"""Model calls blame may spend at most (and a tenth of the remaining budget)."""
JOINT_RUNS = 16
"""Train examples run with the signature instruction for joint demos, at most."""
JOINT_PROBE = 4
"""Of those, how many run first: the rest run only when one of these scored."""
SEARCH_CALLS = 60
"""Model calls the demo search (`searched`) may spend at most (and a quarter of the remaining budget)."""
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
        self.traces: list[Trace] = []
        self.promising: list[Move] = []
        self.raced: dict[str, list[str]] = {}
        """Node id → instructions raced for it so far (a new proposal must not repeat one)."""
        self.dropped: list[Dropped] = []
        """Proposals dropped before they were raced, and why."""
        self.stopped = ""
        self.touched: dict[str, str | None] = {}
        """Candidate id → the node its move changed (None: a model alias or the graph)."""
        self.blamed: dict[str, int] = {}
        """Node id → how many failing bootstrap runs blame put on it; its moves are tried first."""
        self.searched: Searched | None = None
        """Searched demos of the inner nodes (`searched`), when the flow has such nodes."""
        self.joint: joint.JointPool | None = None
        """Good runs that give every tunable node its demos at once (`joint`), on multi-node flows."""
        self.best = Candidate("c0", {}, "the flow as given", text=flow.text, plan=plan)
        self.first_raced = False
        """Whether a round has raced yet: until then the phases before it leave its price (`spare`)."""

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
            await self._bootstrap()
            await self._bootstrap_joint()
            await self._search_demos()
            await self._blame()
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
        self._emit("finished", message=f"search stopped: {self.stopped}")
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
        self._emit("evaluated", candidate=candidate.id, examples=candidate.examples)
        return results

    async def _bootstrap(self) -> None:
        """Run the baseline on train examples; keep the traces for demos and the proposer."""
        count = self._bootstrap_size()
        if count < 1:
            return
        examples = self.rng.sample(self.train.examples, count)
        self._emit("bootstrap", message=f"bootstrapping demos from {count} train examples")
        assert self.best.plan is not None
        self.traces = await self._traces(self.best.plan, examples)
        for trace in self.traces:
            self.best.held_out[trace.example.index] = trace.score

    def _bootstrap_size(self) -> int:
        """Train examples a bootstrap runs: the setting, at most a fifth of the remaining budget."""
        per = max(self.best.calls_per_example, 1.0)
        remaining = self.spare()
        affordable = len(self.train.examples) if remaining is None else int(0.2 * remaining / per)
        return min(self.settings.bootstrap, len(self.train.examples), affordable)

    async def _traces(self, plan: Plan, examples: list[Example]) -> list[Trace]:
        """Runs of a flow on train examples, as the bootstrapper and the proposer read them."""
        traces = []
        for done in await self.evaluator.run(plan, examples):
            outcome = done.result.outcome
            run_id = outcome.run_id
            steps = {s.node: s for s in self.evaluator.store.steps(run_id)} if run_id else {}
            cut = demo_pools.truncated(self.evaluator.store.calls(run_id)) if run_id else frozenset()
            traces.append(Trace(done.example, done.score, outcome.outputs, outcome.error, steps, cut, run_id))
        return traces

    async def _bootstrap_joint(self) -> None:
        """On a flow with several tunable nodes, pool the good runs that give every node its demos
        at once (`joint`). Nodes with no instructions get the signature sentence, and the runs are
        then made anew with it, on the bootstrap's first train examples: a few at first, and more
        only when those gave a good run."""
        assert self.best.plan is not None
        plan = self.best.plan
        nodes = joint.eligible([n for n in tunable_nodes(self.flow) if not self._writes_expressions(n.id)])
        if len(nodes) < 2 or not self.traces:
            return
        edits = joint.instructed(nodes, {n.id: plan.nodes[n.id].node.config.model_dump() for n in nodes})
        traces = self.traces
        if edits:
            signed = Candidate("joint", edits, "signature instructions")
            build(signed, self.flow, self.models)
            assert signed.plan is not None
            examples = [trace.example for trace in self.traces][: min(JOINT_RUNS, self._bootstrap_size())]
            self._emit("bootstrap", message=f"bootstrapping joint demos from {len(examples)} train examples")
            traces = await self._traces(signed.plan, examples[:JOINT_PROBE])
            if any(trace.score >= demo_pools.GOOD for trace in traces):
                traces += await self._traces(signed.plan, examples[JOINT_PROBE:])
        self.joint = joint.pooled(nodes, traces, edits)

    async def _blame(self) -> None:
        """Take the nodes reviewers blamed (a train set from reviews); else, on a flow with several tunable
        nodes, blame a few failing bootstrap runs (counterfactual re-runs, a tenth of the remaining
        budget at most) so moves aim first at the likely culprits."""
        tunable = tunable_nodes(self.flow)
        by_reviewers = reviewer_blamed((e.row for e in self.train.examples), (node.id for node in tunable))
        if by_reviewers:  # reviewers said where it fails: no counterfactual re-runs needed
            self.blamed.update(by_reviewers)
            return
        if len(tunable) < 2 or not self.failing:
            return
        if self.searched is not None and len(self.searched.found) == len(self.searched.groups):
            return  # every inner node has searched demos, raced first: the budget goes to the race
        remaining = self.spare()
        share = BLAME_CALLS if remaining is None else min(BLAME_CALLS, remaining // 10)
        runs = self.failing[:BLAME_RUNS]
        if share < len(runs):
            return
        self._emit("blame", message=f"blaming {len(runs)} failing bootstrap runs")
        options = BlameOptions(samples=BLAME_SAMPLES, budget_calls=share // len(runs))
        for example, run_id in runs:
            record = self.evaluator.store.get_run(run_id)
            if record is None:
                continue
            score = _scorer(self.evaluator.metric, example)
            blame = await blame_run(self.evaluator.store, record, score, options, plan=self.best.plan)
            if blame.culprit:
                self.blamed[blame.culprit] = self.blamed.get(blame.culprit, 0) + 1

    async def _search_demos(self) -> None:
        """For the inner nodes (none a flow output's answer) with no labelled demos, search failing bootstrap runs for answers that
        make the final output right (a quarter of the remaining budget at most): searched demos."""
        nodes = {
            node.id: node
            for node in tunable_nodes(self.flow)
            if searchable(node, demo_pools.labelled(self.flow, node, self.train))
            and not any(feeds_output(self.flow, node, output) for output in self.flow.spec.outputs)
            and not self._writes_expressions(node.id)
        }
        if not nodes or not self.failing:
            return
        remaining = self.spare()
        share = SEARCH_CALLS if remaining is None else min(SEARCH_CALLS, remaining // 4)
        self._emit(
            "search demos", message=f"searching {len(self.failing)} failing runs for demos of {', '.join(nodes)}"
        )
        assert self.best.plan is not None
        below = {
            node.id: node
            for node in tunable_nodes(self.flow)
            if node.id not in nodes and demo_pools.expressible(node) and not self._writes_expressions(node.id)
        }
        search = DemoSearch(self.evaluator.store, self.best.plan, nodes, self.meter, share, below)
        self.searched = await search.run(self.failing, lambda e: _scorer(self.evaluator.metric, e))
        found = {"+".join(g): len(f) for g, f in self.searched.found.items()}
        self._emit("search demos", message=f"searched demos found: {found or 'none'} ({self.searched.calls} calls)")

    def _searched_moves(self) -> list[Move]:
        if self.searched is None:
            return []
        assert self.best.plan is not None
        moves = []
        for group in self.searched.groups:
            if any(node not in self.best.plan.nodes for node in group):
                continue  # a topology move removed it
            pools = [self.searched.pool(group)]
            if self.searched.ambiguous(group):
                pools.append(self.searched.pool(group, -1))
            moves += searched_moves(group, pools, self.rng)
        return moves

    async def _round(self, number: int) -> bool:
        """One round; False when there is nothing left to try."""
        carried = [m for m in self.promising if m.kind not in ANSWER_KINDS or not self._writes_expressions(m.node)]
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
            self._note_raced(move)
        self._emit(
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
            self._emit("rung", message=f"rung {rung + 1}: {len(alive)} of {len(ranked)} go on", alive=len(alive))
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
            self._emit("tie", message=f"{candidate.id} ties the best on dev: both run on {len(rows)} train examples")
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
        assert self.best.plan is not None
        nodes = []
        for node in tunable_nodes(self.flow):
            if node.id not in self.best.plan.nodes:
                continue  # a topology move removed it
            config = self.best.plan.nodes[node.id].node.config.model_dump()
            model = self.best.plan.nodes[node.id].model or "default"
            if self._writes_expressions(node.id):
                nodes.append(NodeMoves(node, config, model, [], [], []))
                continue
            rewrites = [*library(node, self._expected(node), config), *await self._proposals(node, config, number)]
            labelled = demo_pools.labelled(self.flow, node, self.train)
            bootstrapped = demo_pools.topped_up(node, demo_pools.bootstrapped(node, self.traces), labelled)
            nodes.append(NodeMoves(node, config, model, bootstrapped, labelled, rewrites))
        nodes.sort(key=lambda nm: -self.blamed.get(nm.node.id, 0))  # blamed nodes' moves first
        aliases = [a for a in self.best.plan.models if a not in (self.proposer_alias, "judge", "proposer")]
        temperatures = {alias: spec.temperature for alias, spec in self.best.plan.models.items()}
        topology = topology_moves(self.best.plan, self.numeric)
        shared = joint.joint_moves(self.joint, self.rng) if self.joint is not None else []
        prices = {alias: _price(self.best.plan.models[alias]) for alias in aliases}
        return round_moves(
            nodes,
            aliases,
            temperatures,
            self.rng,
            topology=topology,
            searched=self._searched_moves(),
            joint=shared,
            prices=prices,
        )

    def _writes_expressions(self, node: str | None) -> bool:
        """Whether the node writes expressions for a calculator in the best flow: the train answers
        and traces show numbers, so no demo, instruction or format move (library or proposer, both
        made from those answers) fits it; its form, strategy and model are still tuned."""
        assert self.best.plan is not None
        return node is not None and f"{node}{CALCULATE_SUFFIX}" in self.best.plan.nodes

    async def _proposals(self, node: TunableNode, config: dict[str, Any], number: int) -> list[Rewrite]:
        if self.propose is None or not self.traces or not self.affordable(self.settings.proposals):
            return []
        self._emit("propose", message=f"asking the proposer for instructions for {node.id}")
        start = (number - 1) * self.settings.proposals
        raced = self.raced.get(node.id, [])
        rewrites, dropped = await proposed(
            node, config, self.traces, self.propose, self.settings.proposals, start, raced=raced
        )
        self.dropped.extend(dropped)
        for item in dropped:
            self._emit("dropped", message=f"dropped a proposal for {node.id}: {item.reason}")
        return rewrites

    def _note_raced(self, move: Move) -> None:
        """Remember the instructions a move races, so no later proposal repeats them."""
        for path, value in move.edits.items():
            if path[-1:] == ("instructions",) and move.node and isinstance(value, str):
                self.raced.setdefault(move.node, []).append(value)

    def _expected(self, node: TunableNode) -> list[Any]:
        fed = [output for output in self.train.expect if feeds_output(self.flow, node, output)]
        if len(fed) != 1:
            return []
        return [example.row[self.train.expect[fed[0]]] for example in self.train.examples]

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
        self._emit("best", message=f"best: {candidate.id} scores {candidate.score:.3f} on dev ({candidate.described})")

    def _emit(self, event: str, **details: Any) -> None:
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


def _scorer(metric: Metric, example: Example) -> Score:
    """The metric of one example's outputs, 0 where the metric fails."""

    async def score(outputs: dict[str, Any]) -> float:
        try:
            return await metric.score(example.row, outputs)
        except MetricError:
            return 0.0

    return score


def _price(spec: ModelSpec) -> float | None:
    """USD per 1,000 tokens in plus 1,000 out (None: unknown), to tell a dear alias from a cheap one."""
    from studio.models.check import prices

    given = prices(spec)
    return None if None in given else sum(p or 0.0 for p in given)
