"""Demo moves: bootstrapped and labelled demos per node, joint demos for several nodes at once,
and searched demos for inner nodes.

Before the first round the input flow runs on a sample of the train set (the bootstrap): those
traces give bootstrapped demos and the failures and successes the proposer reflects on. On a
flow with several tunable nodes, good runs that give every node its demos at once are pooled
(`joint`); inner nodes with no labelled demos get searched demos (`demo_search`).
"""

from __future__ import annotations

from typing import Any

from studio.evaluate.blame import Score
from studio.evaluate.datasets import Example
from studio.evaluate.metrics import Metric, MetricError
from studio.optimize import demos as demo_pools
from studio.optimize import joint
from studio.optimize.candidates import Candidate, build, feeds_output, tunable_nodes
from studio.optimize.demo_search import DemoSearch, Searched, searchable
from studio.optimize.demos import Trace
from studio.optimize.moves import SEARCHED_FIRST, Move, NodeMoves, demo_moves, searched_moves, tunable_only
from studio.optimize.sources.base import Offer, Round, Searching
from studio.runtime.compiler import Plan

JOINT_RUNS = 16
"""Train examples run with the signature instruction for joint demos, at most."""
JOINT_PROBE = 4
"""Of those, how many run first: the rest run only when one of these scored."""
SEARCH_CALLS = 60
"""Model calls the demo search may spend at most (and a quarter of the remaining budget)."""


class DemoSource:
    """Demos for each node: bootstrapped from the input flow's good runs, labelled from the train
    set, joint (several nodes from the same runs) and searched (inner nodes)."""

    def __init__(self, search: Searching) -> None:
        self.search = search
        self.traces: list[Trace] = []
        """The bootstrap's runs of the input flow."""
        self.joint: joint.JointPool | None = None
        """Good runs that give every tunable node its demos at once, on multi-node flows."""
        self.searched: Searched | None = None
        """Searched demos of the inner nodes, when the flow has such nodes."""

    async def prepare(self) -> None:
        """The bootstrap, then the joint pool and the demo search (both need its failures)."""
        await self._bootstrap()
        await self._bootstrap_joint()
        await self._search_demos()

    async def offer(self, round: Round) -> Offer:
        """Joint moves and the first searched moves lead; then searched and per-node demo moves."""
        s = self.search
        shared = joint.joint_moves(self.joint, s.rng) if self.joint is not None else []
        searched = self._searched_moves()
        moves = list(searched[SEARCHED_FIRST:])
        for nm in round.ranked():
            pooled = nm if s.writes_expressions(nm.node.id) else self._pools(nm)  # an expression writer: no pools
            moves += tunable_only(nm.node, demo_moves(pooled, s.rng))
        return Offer(lead=[*shared, *searched[:SEARCHED_FIRST]], moves=moves)

    def _pools(self, nm: NodeMoves) -> NodeMoves:
        """The node with its bootstrapped and labelled demo pools."""
        labelled = demo_pools.labelled(self.search.flow, nm.node, self.search.train)
        bootstrapped = demo_pools.topped_up(nm.node, demo_pools.bootstrapped(nm.node, self.traces), labelled)
        return NodeMoves(nm.node, nm.config, nm.model, bootstrapped, labelled, [])

    # -- the bootstrap ----------------------------------------------------------------------

    def bootstrap_size(self) -> int:
        """Train examples a bootstrap runs: the setting, at most a fifth of the remaining budget."""
        s = self.search
        per = max(s.best.calls_per_example, 1.0)
        remaining = s.spare()
        affordable = len(s.train.examples) if remaining is None else int(0.2 * remaining / per)
        return min(s.bootstrap, len(s.train.examples), affordable)

    async def _bootstrap(self) -> None:
        """Run the baseline on train examples; keep the traces for demos and the proposer."""
        s = self.search
        count = self.bootstrap_size()
        if count < 1:
            return
        examples = s.rng.sample(s.train.examples, count)
        s.emit("bootstrap", message=f"bootstrapping demos from {count} train examples")
        assert s.best.plan is not None
        self.traces = await self._traces(s.best.plan, examples)
        for trace in self.traces:
            s.best.held_out[trace.example.index] = trace.score

    async def _traces(self, plan: Plan, examples: list[Example]) -> list[Trace]:
        """Runs of a flow on train examples, as the bootstrapper and the proposer read them."""
        store = self.search.evaluator.store
        traces = []
        for done in await self.search.evaluator.run(plan, examples):
            outcome = done.result.outcome
            run_id = outcome.run_id
            steps = {step.node: step for step in store.steps(run_id)} if run_id else {}
            cut = demo_pools.truncated(store.calls(run_id)) if run_id else frozenset()
            traces.append(Trace(done.example, done.score, outcome.outputs, outcome.error, steps, cut, run_id))
        return traces

    async def _bootstrap_joint(self) -> None:
        """On a flow with several tunable nodes, pool the good runs that give every node its demos
        at once (`joint`). Nodes with no instructions get the signature sentence, and the runs are
        then made anew with it, on the bootstrap's first train examples: a few at first, and more
        only when those gave a good run."""
        s = self.search
        assert s.best.plan is not None
        plan = s.best.plan
        nodes = joint.eligible([n for n in tunable_nodes(s.flow) if not s.writes_expressions(n.id)])
        if len(nodes) < 2 or not self.traces:
            return
        edits = joint.instructed(nodes, {n.id: plan.nodes[n.id].node.config.model_dump() for n in nodes})
        traces = self.traces
        if edits:
            signed = Candidate("joint", edits, "signature instructions")
            build(signed, s.flow, s.models)
            assert signed.plan is not None
            examples = [trace.example for trace in self.traces][: min(JOINT_RUNS, self.bootstrap_size())]
            s.emit("bootstrap", message=f"bootstrapping joint demos from {len(examples)} train examples")
            traces = await self._traces(signed.plan, examples[:JOINT_PROBE])
            if any(trace.score >= demo_pools.GOOD for trace in traces):
                traces += await self._traces(signed.plan, examples[JOINT_PROBE:])
        self.joint = joint.pooled(nodes, traces, edits)

    # -- searched demos ---------------------------------------------------------------------

    async def _search_demos(self) -> None:
        """For the inner nodes (none a flow output's answer) with no labelled demos, search failing
        bootstrap runs for answers that make the final output right (a quarter of the remaining
        budget at most): searched demos."""
        s = self.search
        nodes = {
            node.id: node
            for node in tunable_nodes(s.flow)
            if searchable(node, demo_pools.labelled(s.flow, node, s.train))
            and not any(feeds_output(s.flow, node, output) for output in s.flow.spec.outputs)
            and not s.writes_expressions(node.id)
        }
        if not nodes or not s.failing:
            return
        remaining = s.spare()
        share = SEARCH_CALLS if remaining is None else min(SEARCH_CALLS, remaining // 4)
        s.emit("search demos", message=f"searching {len(s.failing)} failing runs for demos of {', '.join(nodes)}")
        assert s.best.plan is not None
        below = {
            node.id: node
            for node in tunable_nodes(s.flow)
            if node.id not in nodes and demo_pools.expressible(node) and not s.writes_expressions(node.id)
        }
        search = DemoSearch(s.evaluator.store, s.best.plan, nodes, s.meter, share, below)
        self.searched = await search.run(s.failing, lambda e: scorer(s.evaluator.metric, e))
        found = {"+".join(g): len(f) for g, f in self.searched.found.items()}
        s.emit("search demos", message=f"searched demos found: {found or 'none'} ({self.searched.calls} calls)")

    def _searched_moves(self) -> list[Move]:
        if self.searched is None:
            return []
        plan = self.search.best.plan
        assert plan is not None
        moves = []
        for group in self.searched.groups:
            if any(node not in plan.nodes for node in group):
                continue  # a topology move removed it
            pools = [self.searched.pool(group)]
            if self.searched.ambiguous(group):
                pools.append(self.searched.pool(group, -1))
            moves += searched_moves(group, pools, self.search.rng)
        return moves


def scorer(metric: Metric, example: Example) -> Score:
    """The metric of one example's outputs, 0 where the metric fails."""

    async def score(outputs: dict[str, Any]) -> float:
        try:
            return await metric.score(example.row, outputs)
        except MetricError:
            return 0.0

    return score
