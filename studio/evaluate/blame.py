"""Blame: which node made a wrong answer wrong, found by counterfactual re-runs.

For a run whose final metric is below 1, each candidate node (a top-level node upstream of the
outputs that called a model, its sub-flow steps included) is run again in counterfactual versions
(`studio.evaluate.counterfactuals`: its model calls re-sampled at temperature > 0 with a new seed;
the node with other demos; the optimizer's variant of the node), everything upstream reused from
the stored run and everything downstream run again (served from the LLM cache where the inputs are
unchanged). A node's blame is the share of those re-runs, all kinds together, whose final metric
reaches 1, with a Wilson interval, taken for the node's strongest kind (the one that fixed the
answer most often); each kind's samples, flips and calls are kept apart, and the totals too.
Counterfactual runs go to a scratch store; the LLM cache is the real store's, so repeating a
blame is free.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from studio.errors import FlowError, InputError, NodeError
from studio.evaluate import counterfactuals as cf
from studio.evaluate.counterfactuals import RESAMPLE, Alternative
from studio.evaluate.live import tagged
from studio.flow.refs import FLOW_INPUTS, refs_in
from studio.flow.spec import Flow, load_flow, load_flow_text
from studio.runtime.compiler import Plan, compile_flow
from studio.runtime.engine import Engine, RunOptions
from studio.runtime.llm import Sample, sampling
from studio.store.base import CallRecord, ExperimentRecord, RunRecord, StepRecord, Store, new_id
from studio.store.memory import MemoryStore

KIND = "blame"
DEFAULT_SAMPLES = 4
DEFAULT_BUDGET_CALLS = 200
TEMPERATURE = 0.9
Score = Callable[[dict[str, Any]], Awaitable[float]]
"""The final metric of a run's outputs, in [0, 1]; 1 is correct."""
Progress = Callable[[int, int], None]
"""Told (failing runs blamed so far, model calls spent so far) after each counterfactual re-run."""


@dataclass
class KindBlame:
    """The counterfactuals of one kind tried on one node."""

    samples: int = 0
    flips: int = 0
    """Counterfactual runs whose final metric reached 1."""
    calls: int = 0
    """Model calls they made (cache hits not counted)."""

    @property
    def rate(self) -> float:
        return self.flips / self.samples if self.samples else 0.0

    @property
    def counts(self) -> tuple[int, int]:
        """(flips, samples)."""
        return self.flips, self.samples

    def as_json(self) -> dict[str, int]:
        return {"samples": self.samples, "flips": self.flips, "calls": self.calls}


@dataclass
class NodeBlame:
    """How often a counterfactual version of one node turned the wrong answer right."""

    node: str
    kinds: dict[str, KindBlame] = field(default_factory=dict)
    """Counterfactual kind → its samples, flips and calls."""
    pending: list[Alternative] = field(default_factory=list, repr=False)
    """The node's `demos` and `variant` counterfactuals not tried yet."""

    def count(self, kind: str, flipped: bool, calls: int) -> None:
        """Record one counterfactual of `kind`."""
        tally = self.kinds.setdefault(kind, KindBlame())
        tally.samples += 1
        tally.flips += flipped
        tally.calls += calls

    @property
    def samples(self) -> int:
        """Counterfactual runs of this node, all kinds."""
        return sum(tally.samples for tally in self.kinds.values())

    @property
    def flips(self) -> int:
        """Those whose final metric reached 1."""
        return sum(tally.flips for tally in self.kinds.values())

    @property
    def calls(self) -> int:
        """Model calls the counterfactual runs of this node made (cache hits not counted)."""
        return sum(tally.calls for tally in self.kinds.values())

    @property
    def flipped_by(self) -> list[str]:
        """The kinds whose counterfactuals turned the answer right at least once."""
        return [kind for kind, tally in self.kinds.items() if tally.flips]

    @property
    def best(self) -> str | None:
        """The kind whose counterfactuals fixed the answer most often (then by its interval's lower
        end): each kind is another intervention, so a node is blamed by its strongest one rather
        than by a rate diluted with kinds that cannot fix it (re-sampling a fault bound to the
        prompt)."""
        if not self.kinds:
            return None
        return max(self.kinds, key=lambda kind: (self.kinds[kind].rate, wilson(*self.kinds[kind].counts)[0]))

    @property
    def score(self) -> float:
        """The flip rate of the node's strongest kind."""
        return self.kinds[self.best].rate if self.best else 0.0

    def interval(self) -> tuple[float, float]:
        """The Wilson interval of that rate."""
        return wilson(*self.kinds[self.best].counts) if self.best else wilson(0, 0)

    def as_json(self) -> dict[str, Any]:
        low, high = self.interval()
        return {
            "node": self.node,
            "score": round(self.score, 4),
            "low": round(low, 4),
            "high": round(high, 4),
            "best": self.best,
            "flips": self.flips,
            "samples": self.samples,
            "calls": self.calls,
            "flipped_by": self.flipped_by,
            "kinds": {kind: tally.as_json() for kind, tally in self.kinds.items()},
        }


@dataclass
class RunBlame:
    """The blame of every candidate node for one failing run, most blamed first."""

    run_id: str
    score: float
    nodes: list[NodeBlame]
    example: int | None = None
    calls: int = 0

    @property
    def culprit(self) -> str | None:
        """The most blamed node, when some counterfactual of some node ever fixed the answer."""
        return self.nodes[0].node if self.nodes and self.nodes[0].flips else None

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "example": self.example,
            "score": self.score,
            "culprit": self.culprit,
            "calls": self.calls,
            "nodes": [n.as_json() for n in self.nodes],
        }


@dataclass
class BlameOptions:
    """How hard blame looks."""

    samples: int = DEFAULT_SAMPLES
    """Counterfactual re-runs per candidate node (doubled when none flips)."""
    budget_calls: int = DEFAULT_BUDGET_CALLS
    """Model calls one failing run may spend (`blame_all`: all of them together); candidates are
    sampled in turn until it is spent (the last counterfactual may cross it by its own calls)."""
    temperature: float = TEMPERATURE
    """Sampling temperature of the re-sampled node."""
    counterfactuals: tuple[str, ...] = (RESAMPLE,)
    """The kinds tried (`resample`, `demos`, `variant`); the CLI asks for all three. `demos` and
    `variant` give at most `samples` and one counterfactual a node, where they apply at all."""


def wilson(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion."""
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def run_plan(store: Store, record: RunRecord) -> Plan:
    """The plan a run ran: its flow file while unchanged, else the flow text stored with it."""
    options = RunOptions.from_json(record.options)
    flow: Flow | None = None
    if record.flow_path:
        try:
            flow = load_flow(record.flow_path)
        except Exception:
            flow = None
        if flow is not None and flow.hash != record.flow_hash:
            flow = None
    if flow is None:
        text = store.flow_text(record.run_id)
        if text is None:
            raise InputError(f"run {record.run_id} has no stored flow", field="RUN")
        flow = load_flow_text(text, file=record.flow_path or f"<run {record.run_id}>")
    return compile_flow(flow, options.models)


def candidates(plan: Plan, calls: list[CallRecord]) -> list[str]:
    """Top-level nodes upstream of the flow's outputs that called a model, in plan order."""
    upstream: set[str] = set()
    todo = [r.node for r in refs_in(dict(plan.outputs)) if r.node != FLOW_INPUTS]
    while todo:
        node = todo.pop()
        if node in upstream or node not in plan.nodes:
            continue
        upstream.add(node)
        todo.extend(plan.nodes[node].deps)
    called = {top_node(c.node) for c in calls}
    return [n for n in plan.order if n in upstream and n in called]


def top_node(path: str) -> str:
    """`map[2].child` → `map`."""
    return path.split(".", 1)[0].split("[", 1)[0]


class Scratch(MemoryStore):
    """Where counterfactual runs are recorded: kept in memory, the LLM cache shared with `store`."""

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.shared = store

    def cache_get(self, key: str) -> dict[str, Any] | None:
        return self.shared.cache_get(key)

    def cache_put(self, key: str, model: str, response: dict[str, Any]) -> None:
        self.shared.cache_put(key, model, response)


async def counterfactual(
    store: Store,
    plan: Plan,
    record: RunRecord,
    node: str,
    seed: int,
    temperature: float = TEMPERATURE,
    *,
    resample: bool = True,
) -> tuple[dict[str, Any] | None, int]:
    """Re-run `record` from `node` with that node re-sampled (or, with `resample` False, as `plan`
    has it, at its own settings); returns (outputs or None, calls)."""
    again = plan.downstream(node)
    last = {s.node: s for s in store.steps(record.run_id)}
    reused: dict[str, StepRecord] = {
        path: step
        for path, step in last.items()
        if step.status in ("succeeded", "skipped") and top_node(path) not in again
    }
    scratch = Scratch(store)
    options = RunOptions.from_json(record.options)
    options.cache = True
    with sampling({node: Sample(temperature, seed)} if resample else {}):
        result = await Engine(scratch).run(plan, record.inputs, options=options, finished=reused)
    calls = sum(1 for c in scratch.calls(result.run_id) if not c.cache_hit)
    return (result.outputs if result.status == "succeeded" else None), calls


async def blame_run(
    store: Store,
    record: RunRecord,
    score: Score,
    options: BlameOptions | None = None,
    *,
    plan: Plan | None = None,
    good_runs: list[str] | None = None,
    progress: Callable[[int], None] | None = None,
) -> RunBlame:
    """Blame each candidate node of one run (whose score is below 1) by counterfactual re-runs;
    `good_runs` (runs of other examples that scored 1) give demos to nodes that have none;
    `progress` is told the calls spent after each counterfactual."""
    options = options or BlameOptions()
    plan = plan or run_plan(store, record)
    base = await score(record.outputs or {}) if record.status == "succeeded" else 0.0
    nodes = [NodeBlame(n) for n in candidates(plan, store.calls(record.run_id))]
    blame = RunBlame(record.run_id, base, nodes)
    if base >= 1 or not nodes:
        return blame
    good = [r for r in good_runs or [] if r != record.run_id]
    given = {s.node: s.inputs for s in store.steps(record.run_id)}
    for node in nodes:
        node.pending = cf.alternatives(
            store,
            plan,
            node.node,
            options.counterfactuals,
            good_runs=good,
            flow_hash=record.flow_hash,
            limit=options.samples,
            given=given.get(node.node),
        )
    seed = 0
    while seed < options.samples * (1 if any(n.flips for n in nodes) or seed < options.samples else 2):
        seed += 1  # every node in turn; twice as many rounds when nothing flipped yet
        if not await _sample(store, plan, record, score, options, blame, nodes, seed, progress):
            return _ranked(blame, plan)
    extra = 0
    while extra < options.samples * 2 and _undecided(_ranked(blame, plan).nodes):
        extra += 1  # the two most blamed overlap: sample just those until they separate
        if not await _sample(store, plan, record, score, options, blame, blame.nodes[:2], seed + extra, progress):
            break
    return _ranked(blame, plan)


async def _sample(
    store: Store,
    plan: Plan,
    record: RunRecord,
    score: Score,
    options: BlameOptions,
    blame: RunBlame,
    nodes: list[NodeBlame],
    seed: int,
    progress: Callable[[int], None] | None = None,
) -> bool:
    """One counterfactual of each kind of each of `nodes` (a re-sample, the next demos or variant
    config while any is left); False once the budget is spent."""
    for node in nodes:
        if RESAMPLE in options.counterfactuals:
            if blame.calls >= options.budget_calls:
                return False
            outputs, calls = await counterfactual(store, plan, record, node.node, seed, options.temperature)
            await _count(blame, node, RESAMPLE, outputs, calls, score, progress)
        if node.pending:
            if blame.calls >= options.budget_calls:
                return False
            alternative = node.pending.pop(0)
            models = RunOptions.from_json(record.options).models
            try:
                changed = cf.with_config(plan, node.node, alternative.config, models)
            except (FlowError, NodeError):
                continue  # the node does not accept this config: no counterfactual
            outputs, calls = await counterfactual(store, changed, record, node.node, seed, resample=False)
            await _count(blame, node, alternative.kind, outputs, calls, score, progress)
    return blame.calls < options.budget_calls


async def _count(
    blame: RunBlame,
    node: NodeBlame,
    kind: str,
    outputs: dict[str, Any] | None,
    calls: int,
    score: Score,
    progress: Callable[[int], None] | None = None,
) -> None:
    flipped = outputs is not None and await score(outputs) >= 1
    node.count(kind, flipped, calls)
    blame.calls += calls
    if progress is not None:
        progress(blame.calls)


def _undecided(nodes: list[NodeBlame]) -> bool:
    """Whether the runner-up flipped the answer too and its interval still overlaps the top one's."""
    if len(nodes) < 2 or not nodes[1].flips:
        return False
    return nodes[0].interval()[0] < nodes[1].interval()[1]


def _ranked(blame: RunBlame, plan: Plan) -> RunBlame:
    """Most blamed first: by flip rate, then the interval's lower end, then upstream first."""
    blame.nodes.sort(key=lambda n: (-n.score, -n.interval()[0], plan.order.index(n.node)))
    return blame


def save(store: Store, blames: list[RunBlame], *, flow: str, target: str, options: BlameOptions) -> str:
    """Record a blame as an experiment of kind `blame` (summary: per-run blame, node totals);
    returns its id."""
    experiment_id = create(store, flow=flow, target=target, options=options)
    finish(store, experiment_id, blames, target=target, failing=len(blames), budget_calls=options.budget_calls)
    return experiment_id


def create(store: Store, *, flow: str, target: str, options: BlameOptions) -> str:
    """The blame's experiment, made before it starts (so a studio launch can show its progress)."""
    experiment_id = new_id()
    config = {
        "target": target,
        "samples": options.samples,
        "budget_calls": options.budget_calls,
        "counterfactuals": list(options.counterfactuals),
    }
    store.create_experiment(ExperimentRecord(experiment_id=experiment_id, kind=KIND, flow=flow, config=config))
    return experiment_id


def finish(
    store: Store, experiment_id: str, blames: list[RunBlame], *, target: str, failing: int, budget_calls: int
) -> None:
    """Store the blame's outcome; `failing`: the failing runs there were (the budget may have reached fewer)."""
    result = summary(blames, target) | {"failing_found": failing, "budget_calls": budget_calls}
    store.finish_experiment(experiment_id, tagged(result))  # tied to its studio launch, if any


def calls_needed(summary: dict[str, Any], budget_calls: int | None = None) -> int | None:
    """About how many calls would blame every failing run, when the budget reached fewer (else None):
    the calls a blamed run took on average, times the failing runs, rounded up to tens."""
    found, blamed = int(summary.get("failing_found") or 0), int(summary.get("failing") or 0)
    budget_calls = budget_calls or int(summary.get("budget_calls") or 0)
    if found <= blamed or not budget_calls:
        return None
    each = max(int(summary.get("calls") or 0), budget_calls) / max(blamed, 1)
    return max(budget_calls + 10, math.ceil(each * found / 10) * 10)


def summary(blames: list[RunBlame], target: str) -> dict[str, Any]:
    """What the studio shows: each failing run's blame, and how often each node was the culprit."""
    culprits: dict[str, int] = {}
    for blame in blames:
        if blame.culprit:
            culprits[blame.culprit] = culprits.get(blame.culprit, 0) + 1
    return {
        "target": target,
        "failing": len(blames),
        "calls": sum(b.calls for b in blames),
        "culprits": dict(sorted(culprits.items(), key=lambda kv: -kv[1])),
        "runs": {b.run_id: b.as_json() for b in blames},
    }


def blame_of_run(store: Store, run_id: str) -> dict[str, Any] | None:
    """The latest stored blame of one run, for the trace viewer; None when never blamed."""
    for experiment in store.list_experiments(limit=200, kind=KIND):
        runs = (experiment.summary or {}).get("runs") or {}
        if run_id in runs:
            found: dict[str, Any] = runs[run_id]
            return found
    return None


@dataclass
class Failing:
    """One failing run to blame, with how to score a counterfactual's outputs."""

    record: RunRecord
    score: Score
    example: int | None = None
    good_runs: list[str] = field(default_factory=list)
    """Runs of the same experiment that scored 1: where `demos` counterfactuals take demos from."""


def failing_of_experiment(store: Store, experiment_id: str, example: int | None = None) -> list[Failing]:
    """The runs of a batch experiment whose score is below 1 (or the one of `example`)."""
    from studio.evaluate.batch import KIND as BATCH
    from studio.evaluate.batch import BatchOptions, finished_runs, prepare

    experiment = store.get_experiment(experiment_id)
    if experiment is None or experiment.kind != BATCH:
        raise InputError(f"no batch experiment {experiment_id!r} in the store", field="EXPERIMENT")
    _, dataset, metric = prepare(BatchOptions.from_config(experiment.config))
    if metric is None:
        raise InputError(f"experiment {experiment_id} has no metric; blame needs one", field="EXPERIMENT")
    scores = (experiment.summary or {}).get("scores") or {}
    good = [run_id for run_id, value in scores.items() if value is not None and value >= 1]
    found: list[Failing] = []
    for index, record in sorted(finished_runs(store, experiment_id, dataset.examples).items()):
        if example is not None and index != example:
            continue
        row = dataset.examples[index].row
        score = _scorer(metric, row)
        value = scores.get(record.run_id)
        if value is None or value < 1:
            found.append(Failing(record, score, index, good))
    if example is not None and not found and example not in {f.example for f in found}:
        count = len(dataset.examples)
        if not 0 <= example < count:
            raise InputError(f"--example {example}: the experiment has examples 0..{count - 1}", field="--example")
    return found


def failing_of_run(
    store: Store, run_id: str, *, expect: dict[str, Any] | None = None, metric_name: str | None = None
) -> list[Failing]:
    """One run to blame: scored by its experiment's metric, or by `expect` (OUTPUT → value)."""
    from studio.evaluate.metrics import resolve_metric

    record = store.get_run(run_id)
    if record is None:
        raise InputError(f"no run or experiment {run_id!r} in the store", field="TARGET")
    if not expect and record.experiment_id:
        within = [f for f in failing_of_experiment(store, record.experiment_id) if f.record.run_id == run_id]
        if not within:
            raise InputError(f"run {run_id} scored 1 in its experiment; nothing to blame", field="TARGET")
        return within
    if not expect:
        raise InputError(
            f"run {run_id} is in no experiment; say what was right with --expect OUTPUT=VALUE", field="--expect"
        )
    columns = {name: f"expected.{name}" for name in expect}
    row = {columns[name]: value for name, value in expect.items()}
    metric = resolve_metric(metric_name or "exact", expect=columns, plan=run_plan(store, record))
    return [Failing(record, _scorer(metric, row))]


def _scorer(metric: Any, row: dict[str, Any]) -> Score:
    async def score(outputs: dict[str, Any]) -> float:
        from studio.evaluate.metrics import MetricError

        try:
            value: float = await metric.score(row, outputs)
        except MetricError:
            return 0.0
        return value

    return score


async def blame_all(
    store: Store, failing: list[Failing], options: BlameOptions | None = None, progress: Progress | None = None
) -> list[RunBlame]:
    """Blame each failing run in turn, within one call budget for them all (`options.budget_calls`):
    each run gets an even share of what is left, and the runs no share reaches are not blamed;
    `progress` hears how far it got after each counterfactual."""
    options = options or BlameOptions()
    blames: list[RunBlame] = []
    plans: dict[str, Plan] = {}
    spent = 0
    for index, item in enumerate(failing):
        share = (options.budget_calls - spent) // (len(failing) - index)
        if share < 1:
            break
        key = item.record.flow_hash + repr(sorted(item.record.options.get("models", {}).items()))
        if key not in plans:
            plans[key] = run_plan(store, item.record)
        own = replace(options, budget_calls=share)
        told = None if progress is None else (lambda calls, done=index, before=spent: progress(done, before + calls))
        blame = await blame_run(
            store, item.record, item.score, own, plan=plans[key], good_runs=item.good_runs, progress=told
        )
        blame.example = item.example
        blames.append(blame)
        spent += blame.calls
        if progress is not None:
            progress(index + 1, spent)
    return blames


def blame_of_experiment(store: Store, experiment_id: str) -> dict[str, Any] | None:
    """The latest stored blame of a batch experiment (or a blame's own summary), for the studio."""
    own = store.get_experiment(experiment_id)
    if own is not None and own.kind == KIND:
        return own.summary
    for experiment in store.list_experiments(limit=200, kind=KIND):
        if experiment.config.get("target") == experiment_id and experiment.summary:
            return experiment.summary
    return None


def culprit_rows(summary: dict[str, Any], sep: str = ", ") -> list[dict[str, Any]]:
    """One row per blamed run: its example, the likely culprit, its blame and interval, the calls
    (`sep` between the kinds that flipped it)."""
    rows = []
    for run in (summary.get("runs") or {}).values():
        top = run["nodes"][0] if run["nodes"] else None
        strongest = (top.get("kinds") or {}).get(top.get("best") or "") if top else None
        rows.append(
            {
                "example": run["example"],
                "run": run["run_id"],
                "culprit": run["culprit"] or "(none found)",
                "blame": _rate(top, strongest) if top else "-",
                "interval": f"{top['low']:.2f}-{top['high']:.2f}" if top else "-",
                "flipped by": flipped_by(top, sep) if top else "-",
                "calls": run["calls"],
            }
        )
    return rows


def flipped_by(node: dict[str, Any], sep: str = ", ") -> str:
    """`demos 2/3 (5 calls), resample 0/8 (8 calls)`: each kind tried on a blamed node (as stored)."""
    tried = node.get("kinds") or {}
    if not tried:  # a blame stored before kinds were recorded: re-sampling only
        return f"resample {node['flips']}/{node['samples']} ({node['calls']} calls)"
    return sep.join(f"{kind} {t['flips']}/{t['samples']} ({t['calls']} calls)" for kind, t in tried.items())


def _rate(node: dict[str, Any], strongest: dict[str, Any] | None) -> str:
    """`3/3 demos`: the flips and samples of the node's strongest kind (its totals when stored
    before kinds were recorded)."""
    if strongest is None:
        return f"{node['flips']}/{node['samples']}"
    return f"{strongest['flips']}/{strongest['samples']} {node['best']}"
