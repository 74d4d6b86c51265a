"""Which nodes a round's moves aim at first: the nodes reviewers blamed, else the culprits that
counterfactual re-runs (`evaluate.blame`) find in a few failing bootstrap runs."""

from __future__ import annotations

from studio.evaluate.blame import BlameOptions, blame_run
from studio.optimize.candidates import tunable_nodes
from studio.optimize.demo_search import Searched
from studio.optimize.sources.base import Searching
from studio.optimize.sources.demos import scorer
from studio.reviews.dataset import reviewer_blamed

BLAME_RUNS = 4
"""Failing bootstrap runs blamed before the first round (flows with several tunable nodes)."""
BLAME_SAMPLES = 2
"""Re-samples per candidate node and run (doubled when none flips)."""
BLAME_CALLS = 120
"""Model calls blame may spend at most (and a tenth of the remaining budget)."""


async def culprits(search: Searching, searched: Searched | None) -> dict[str, int]:
    """Node id → failing runs blamed on it: the reviewers' verdicts on a train set made from reviews;
    else, on a flow with several tunable nodes, blame of a few failing bootstrap runs (a tenth of
    the remaining budget at most). None blamed when every inner node has searched demos (raced
    first anyway: the budget goes to the race)."""
    tunable = tunable_nodes(search.flow)
    by_reviewers = reviewer_blamed((e.row for e in search.train.examples), (node.id for node in tunable))
    if by_reviewers:  # reviewers said where it fails: no counterfactual re-runs needed
        return dict(by_reviewers)
    if len(tunable) < 2 or not search.failing:
        return {}
    if searched is not None and len(searched.found) == len(searched.groups):
        return {}
    remaining = search.spare()
    share = BLAME_CALLS if remaining is None else min(BLAME_CALLS, remaining // 10)
    runs = search.failing[:BLAME_RUNS]
    if share < len(runs):
        return {}
    search.emit("blame", message=f"blaming {len(runs)} failing bootstrap runs")
    options = BlameOptions(samples=BLAME_SAMPLES, budget_calls=share // len(runs))
    store, blamed = search.evaluator.store, dict[str, int]()
    for example, run_id in runs:
        record = store.get_run(run_id)
        if record is None:
            continue
        blame = await blame_run(store, record, scorer(search.evaluator.metric, example), options, plan=search.best.plan)
        if blame.culprit:
            blamed[blame.culprit] = blamed.get(blame.culprit, 0) + 1
    return blamed
