"""Running a candidate on examples: every example a run in the store under the experiment.

The first example runs alone, so one-off calls of a freshly compiled flow (a classify
node's calibration) are made once and cached before the rest run concurrently. A run's
model calls are read back from the store: all of them (cache hits included) say how many
calls an example needs, and cache hits are priced at what the same request cost when it was
made, so a candidate's cost per example does not depend on what earlier candidates paid for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

from studio.evaluate.batch import ExampleResult, score_example
from studio.evaluate.datasets import Example
from studio.evaluate.executors import LocalExecutor
from studio.evaluate.metrics import Metric
from studio.optimize.meter import Meter, usage_key
from studio.runtime.compiler import Plan
from studio.runtime.engine import RunOptions
from studio.store.base import Store


class BudgetSpent(Exception):
    """A run was refused a model call: the evaluation is incomplete and is discarded."""


class NothingSucceeds(Exception):
    """Every run of the first dev minibatch failed (a missing model, missing credentials): searching
    further would spend the budget on the same failure."""


@dataclass
class Evaluated:
    """One example's run, its score and what its model calls cost."""

    example: Example
    result: ExampleResult
    calls: int
    tokens: int
    cost_usd: float
    requests: str
    """Fingerprint of every request the run sent: equal fingerprints mean the same prompts."""

    @property
    def score(self) -> float:
        return self.result.score or 0.0


class Evaluator:
    """Runs plans on examples and scores them with the metric."""

    def __init__(
        self,
        store: Store,
        metric: Metric,
        meter: Meter,
        *,
        experiment_id: str,
        models: Mapping[str, str],
        concurrency: int,
    ) -> None:
        self.store = store
        self.metric = metric
        self.meter = meter
        self.experiment_id = experiment_id
        self.models = dict(models)
        self.concurrency = concurrency

    async def run(self, plan: Plan, examples: list[Example]) -> list[Evaluated]:
        """Every example's run and score, in the order given; raises BudgetSpent when a call was refused."""
        refused = self.meter.refused
        done: dict[int, Evaluated] = {}
        if examples:
            await self._batch(plan, examples[:1], 1, done)
            await self._batch(plan, examples[1:], self.concurrency, done)
        if self.meter.refused > refused:
            raise BudgetSpent(f"the budget ran out while evaluating {plan.flow.file}")
        return [done[id(e)] for e in examples]

    async def _batch(self, plan: Plan, examples: list[Example], concurrency: int, done: dict[int, Evaluated]) -> None:
        if not examples:
            return
        options = RunOptions(cache=True, models=dict(self.models))
        executor = LocalExecutor(self.store)
        async for example, outcome in executor.run(
            plan, examples, experiment_id=self.experiment_id, options=options, concurrency=concurrency
        ):
            result = ExampleResult(example.index, example.line, outcome)
            await score_example(self.metric, example, result)
            done[id(example)] = Evaluated(example, result, *self._usage(outcome.run_id))

    def _usage(self, run_id: str | None) -> tuple[int, int, float, str]:
        """Calls of a run (cache hits too), its tokens and USD with hits priced as when made, and
        the fingerprint of its requests."""
        if run_id is None:
            return 0, 0, 0.0, ""
        calls = self.store.calls(run_id)
        requests = json.dumps([[call.model, call.request] for call in calls], sort_keys=True)
        tokens, cost = 0, 0.0
        for call in calls:
            if call.cache_hit:
                made_tokens, made_cost = self.meter.usage.get(usage_key(call.model, call.request), (0, 0.0))
                tokens, cost = tokens + made_tokens, cost + made_cost
            else:
                tokens, cost = tokens + call.input_tokens + call.output_tokens, cost + call.cost_usd
        return len(calls), tokens, cost, hashlib.sha256(requests.encode()).hexdigest()
