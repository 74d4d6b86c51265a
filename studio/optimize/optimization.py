"""`flowstudio optimize`: check everything, search within the budget, write the flow and the report.

Everything that can be wrong with the input is found before the first model call: a train
set too small to learn from, a dev or test set without the expected column, a metric that
gives 0 even to the expected values themselves, a budget too small to evaluate the flow on
the dev set and one candidate on a minibatch. The best flow so far is written to `--out`
whenever it changes, so a stopped search leaves its best result behind; running the same
command again replays every call it already made from the LLM cache (free, and not counted).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from studio.compiler import Plan, compile_flow
from studio.datasets import DataError, Dataset, load_dataset
from studio.engine import Engine, RunOptions
from studio.errors import InputError
from studio.metrics import LLMJudge, Metric, resolve_metric
from studio.optimize import pareto, report
from studio.optimize.candidates import Candidate, tunable_nodes
from studio.optimize.evaluate import BudgetSpent, Evaluator
from studio.optimize.meter import Meter, metering
from studio.optimize.search import Progress, Search, Settings, calls_per_example, overhead_calls
from studio.spec import Flow, load_flow, load_flow_text
from studio.store.base import ExperimentRecord, Store, new_id
from studio.store.memory import MemoryStore

KIND = "optimize"
MIN_TRAIN = 4
MIN_DEV = 2
PROPOSER_TOKENS = 120
NO_PROPOSER = "none"


@dataclass
class OptimizeOptions:
    """What `flowstudio optimize` was asked; stored as the experiment's config."""

    flow: str
    train: str
    dev: str
    metric: str
    budget_calls: int
    test: str | None = None
    budget_usd: float | None = None
    proposer: str | None = None
    """Model alias that writes instructions; default: `proposer` if the flow has it, else `default`;
    `none` for the rewrite library alone."""
    out: str | None = None
    seed: int = 0
    map_inputs: dict[str, str] = field(default_factory=dict)
    expect: dict[str, str] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)
    judge: str | None = None
    rubric: str | None = None
    concurrency: int = 4
    max_cost_per_example: float | None = None
    """Choose the best-scoring candidate whose USD per example stays within this."""
    minibatch: int = 8
    width: int = 10
    max_rounds: int = 8

    def out_path(self) -> Path:
        if self.out:
            return Path(self.out)
        source = Path(self.flow)
        return source.with_name(source.stem + ".optimized" + (source.suffix or ".yaml"))

    def settings(self) -> Settings:
        return Settings(minibatch=self.minibatch, width=self.width, max_rounds=self.max_rounds, seed=self.seed)


@dataclass
class Prepared:
    """A checked optimization, ready to run: nothing has run and nothing is recorded yet."""

    options: OptimizeOptions
    flow: Flow
    plan: Plan
    train: Dataset
    dev: Dataset
    test: Dataset | None
    proposer: str | None
    out: Path


@dataclass
class OptimizeResult:
    experiment_id: str
    report: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        """The object `flowstudio optimize --json` prints."""
        r = self.report
        return {
            "experiment_id": r["experiment_id"],
            "flow_out": r["flow_out"],
            "calls": r["calls"],
            "tokens": r["tokens"],
            "cost_usd": r["cost_usd"],
            "before": {"dev": r["before"]["dev"], "test": r["before"]["test"]},
            "after": {"dev": r["after"]["dev"], "test": r["after"]["test"]},
            "pareto": [{k: p[k] for k in ("score", "cost_per_example", "candidate")} for p in r["pareto"]],
        }


def _dataset(path: str, plan: Plan, options: OptimizeOptions) -> Dataset:
    return load_dataset(path, plan, map_inputs=options.map_inputs, expect=options.expect)


def _same_columns(reference: Dataset, other: Dataset, option: str) -> None:
    for output, column in reference.expect.items():
        if other.expect.get(output) != column:
            raise DataError(
                f"{option} has no column {column!r} with the expected {output!r} (the train set has it); "
                f"its columns are {other.columns}",
                file=str(other.path),
                line=1,
                field=column,
            )


def check_metric(metric: Metric, datasets: list[Dataset]) -> None:
    """Refuse a metric that scores 0 even when the outputs equal the expected values (before any call)."""
    if isinstance(metric.fn, LLMJudge) or metric.name == "regex":
        return  # a judge costs calls; a regex column holds patterns, not answers
    if not all(dataset.expect for dataset in datasets):
        return  # no expected values to try it on
    tried, problem = 0, ""
    for dataset in datasets:
        for example in dataset.examples[:50]:
            outputs = {output: example.row[column] for output, column in dataset.expect.items()}
            try:
                value = metric.fn(example.row, outputs)
            except Exception as err:  # a user's metric may fail in any way: that is what we report
                problem = problem or f" (on {dataset.path}:{example.line} it raised {type(err).__name__}: {err})"
                continue
            if asyncio.iscoroutine(value):
                value.close()
                return
            tried += 1
            if isinstance(value, int | float) and value > 0:
                return
    if tried or problem:
        raise InputError(
            f"metric {metric.name!r} scores 0 even when the outputs equal the expected values{problem}; "
            "the search would have nothing to climb (check --metric and --expect)",
            field="--metric",
        )


def needed_calls(plan: Plan, dev: int, minibatch: int) -> int:
    """Calls to evaluate the flow on the dev set and one candidate on the first minibatch."""
    per, once = calls_per_example(plan), overhead_calls(plan)
    return math.ceil(per * dev) + once + math.ceil(per * min(minibatch, dev)) + once


def prepare(options: OptimizeOptions) -> Prepared:
    """Load and check the flow, datasets, metric, proposer and budget; nothing runs. Raises FlowError."""
    flow = load_flow(options.flow)
    plan = compile_flow(flow, options.models)
    out = options.out_path()
    if out.resolve() == Path(options.flow).resolve():
        raise InputError("--out must not be the input flow: the optimizer never changes it in place", field="--out")
    if not tunable_nodes(flow):
        raise InputError("nothing to optimize: the flow has no llm.generate or llm.classify node", file=flow.file)
    train = _dataset(options.train, plan, options)
    if len(train.examples) < MIN_TRAIN:
        raise DataError(
            f"the train set has {len(train.examples)} examples; the optimizer needs at least {MIN_TRAIN} "
            "to draw demos and failures from",
            file=options.train,
        )
    dev = _dataset(options.dev, plan, options)
    if len(dev.examples) < MIN_DEV:
        raise DataError(f"the dev set has {len(dev.examples)} example; at least {MIN_DEV} are needed", file=options.dev)
    _same_columns(train, dev, "--dev")
    test = _dataset(options.test, plan, options) if options.test else None
    if test is not None:
        _same_columns(train, test, "--test")
    metric = resolve_metric(options.metric, expect=dev.expect, plan=plan, judge=options.judge, rubric=options.rubric)
    check_metric(metric, [train, dev])
    proposer = _proposer_alias(options, plan)
    needed = needed_calls(plan, len(dev.examples), options.minibatch)
    if options.budget_calls < needed:
        raise InputError(
            f"--budget-calls {options.budget_calls} is too small: evaluating the flow on the {len(dev.examples)} dev "
            f"examples and one candidate on a minibatch of {min(options.minibatch, len(dev.examples))} needs about "
            f"{needed} calls",
            field="--budget-calls",
        )
    if options.budget_usd is not None and options.budget_usd <= 0:
        raise InputError("--budget-usd must be more than 0", field="--budget-usd")
    Engine(MemoryStore()).check_models(plan)  # a bad model setting fails here, before any call
    return Prepared(options, flow, plan, train, dev, test, proposer, out)


def _proposer_alias(options: OptimizeOptions, plan: Plan) -> str | None:
    if options.proposer == NO_PROPOSER:
        return None
    if options.proposer is not None:
        if options.proposer not in plan.models:
            raise InputError(
                f"proposer alias {options.proposer!r} is not in the flow's models {sorted(plan.models)}",
                field="--proposer",
            )
        return options.proposer
    for alias in ("proposer", "default"):
        if alias in plan.models:
            return alias
    return None


def proposer_plan(flow: Flow, alias: str, models: dict[str, str]) -> Plan:
    """A one-node flow that sends a request to the proposer alias and returns its text."""
    settings = {k: v for k, v in flow.document.data["models"][alias].items() if k != "fallbacks"}
    data = {
        "flowstudio": 1,
        "name": "optimizer-proposer",
        "inputs": {"request": {"type": "str"}},
        "outputs": {"instructions": "$propose.text"},
        "models": {"default": settings},
        "nodes": {
            "propose": {
                "type": "llm.generate",
                "inputs": {"request": "$inputs.request"},
                "config": {"prompt": "{{ request }}", "max_tokens": PROPOSER_TOKENS},
            }
        },
    }
    overrides = {"default": models[alias]} if alias in models else {}
    return compile_flow(load_flow_text(json.dumps(data), file=f"<proposer {alias}>", path=flow.path), overrides)


def _write(path: Path, text: str) -> None:
    """Replace the file in one step, so an interrupted search never leaves half a flow."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


class Optimization:
    """One run of the optimizer over a prepared input, recorded as an experiment."""

    def __init__(self, prepared: Prepared, store: Store, progress: Progress | None = None) -> None:
        self.prepared = prepared
        self.store = store
        self.progress = progress
        self.options = prepared.options
        self.experiment_id = new_id()
        self.meter = Meter(self.options.budget_calls, self.options.budget_usd)
        self.search: Search | None = None
        """The search, once `run` has started it (tests and the studio read its candidates)."""

    def config(self) -> dict[str, Any]:
        p = self.prepared
        return {
            **asdict(self.options),
            "flow_hash": p.flow.hash,
            "flow_out": str(p.out),
            "proposer": p.proposer,
            "datasets": {
                name: {"path": str(d.path), "sha256": d.sha256, "examples": len(d.examples)}
                for name, d in (("train", p.train), ("dev", p.dev), ("test", p.test))
                if d is not None
            },
        }

    async def run(self) -> OptimizeResult:
        p = self.prepared
        record = ExperimentRecord(self.experiment_id, KIND, p.flow.spec.name, config=self.config())
        self.store.create_experiment(record)
        with metering(self.meter):
            metric = resolve_metric(
                self.options.metric,
                expect=p.dev.expect,
                plan=p.plan,
                judge=self.options.judge,
                rubric=self.options.rubric,
            )
            evaluator = Evaluator(
                self.store,
                metric,
                self.meter,
                experiment_id=self.experiment_id,
                models=self.options.models,
                concurrency=self.options.concurrency,
            )
            search = self.search = Search(
                flow=p.flow,
                plan=p.plan,
                train=p.train,
                dev=p.dev,
                evaluator=evaluator,
                meter=self.meter,
                models=self.options.models,
                settings=self.options.settings(),
                propose=self._ask if p.proposer else None,
                proposer_alias=p.proposer,
                progress=self.progress,
                on_best=self._keep,
            )
            try:
                await search.run()
            except BudgetSpent:
                raise InputError(
                    f"--budget-calls {self.options.budget_calls} ran out before the flow was evaluated on the dev set",
                    field="--budget-calls",
                ) from None
            except (asyncio.CancelledError, KeyboardInterrupt):
                self._summary("interrupted", search.best)
                raise
        chosen = self._choose(search)
        _write(p.out, chosen.text)
        compile_flow(load_flow(p.out), self.options.models)  # the written flow must load and compile
        with metering(Meter()) as report_meter:
            before_test, after_test = await self._test(evaluator, search.candidates[0], chosen)
        result = self._report(search, chosen, before_test, after_test, report_meter)
        self.store.finish_experiment(
            self.experiment_id, {**result, "status": "finished", "scores": self._scores(search)}
        )
        return OptimizeResult(self.experiment_id, result)

    async def _ask(self, request: str) -> str | None:
        p = self.prepared
        if self.meter.spent or p.proposer is None:
            return None
        plan = proposer_plan(p.flow, p.proposer, self.options.models)
        options = RunOptions(cache=True, models=dict(self.options.models))
        result = await Engine(self.store).run(
            plan, {"request": request}, options=options, experiment_id=self.experiment_id
        )
        if result.status != "succeeded" or not result.outputs:
            return None
        text = result.outputs.get("instructions")
        return text if isinstance(text, str) else None

    def _keep(self, candidate: Candidate) -> None:
        """The best so far goes to --out at once, so a stopped search keeps it."""
        _write(self.prepared.out, candidate.text)
        self._summary("running", candidate)

    def _summary(self, status: str, best: Candidate) -> None:
        summary = {
            "status": status,
            "flow_out": str(self.prepared.out),
            "best": best.id,
            "best_dev": round(best.score, 6) if best.scores else None,
            "calls": self.meter.calls,
            "tokens": self.meter.tokens,
            "cost_usd": round(self.meter.cost_usd, 10),
        }
        self.store.finish_experiment(self.experiment_id, summary)

    def _choose(self, search: Search) -> Candidate:
        """The best dev score among fully evaluated candidates within the cost limit (ties: cheaper)."""
        full = [c for c in search.candidates if c.examples == len(self.prepared.dev.examples)]
        limit = self.options.max_cost_per_example
        within = [c for c in full if limit is None or c.cost_per_example <= limit]
        if not within:
            return min(full, key=lambda c: c.cost_per_example)
        return max(within, key=lambda c: (c.score, -c.cost_per_example, -c.calls_per_example, c.id == "c0"))

    async def _test(
        self, evaluator: Evaluator, before: Candidate, after: Candidate
    ) -> tuple[float | None, float | None]:
        test = self.prepared.test
        if test is None:
            return None, None
        scores: dict[str, float] = {}
        for candidate in (before, after):
            if candidate.id not in scores:
                assert candidate.plan is not None
                if self.progress is not None:
                    message = f"scoring {candidate.id} on the test set"
                    self.progress(event="test", message=message, best=None, calls=self.meter.calls)
                done = await evaluator.run(candidate.plan, test.examples)
                scores[candidate.id] = sum(d.score for d in done) / len(done)
        return scores[before.id], scores[after.id]

    def _report(
        self, search: Search, chosen: Candidate, before_test: float | None, after_test: float | None, spent: Meter
    ) -> dict[str, Any]:
        p = self.prepared
        baseline = search.candidates[0]
        full = [c for c in search.candidates if c.examples == len(p.dev.examples)]
        points = [pareto.Point.of(c) for c in full]
        edge = pareto.front(points)
        stem = str(p.out.with_suffix(""))
        plots = pareto.write_plots(points, chosen.id, f"{p.flow.spec.name}: dev score vs cost", f"{stem}.pareto")

        def side(candidate: Candidate, test: float | None) -> dict[str, Any]:
            return {
                "candidate": candidate.id,
                "move": candidate.move,
                "dev": round(candidate.score, 6),
                "test": None if test is None else round(test, 6),
                "cost_per_example": round(candidate.cost_per_example, 10),
                "tokens_per_example": round(candidate.tokens_per_example, 3),
                "calls_per_example": round(candidate.calls_per_example, 3),
            }

        result: dict[str, Any] = {
            "experiment_id": self.experiment_id,
            "flow": str(p.flow.path or p.flow.file),
            "flow_out": str(p.out),
            "metric": self.options.metric,
            "seed": self.options.seed,
            "budget": {"calls": self.options.budget_calls, "usd": self.options.budget_usd},
            "stopped": search.stopped,
            "calls": self.meter.calls,
            "tokens": self.meter.tokens,
            "cost_usd": round(self.meter.cost_usd, 10),
            "report_calls": spent.calls,
            "report_tokens": spent.tokens,
            "report_cost_usd": round(spent.cost_usd, 10),
            "before": side(baseline, before_test),
            "after": side(chosen, after_test),
            "pareto": [
                {
                    **point.as_json(),
                    "tokens_per_example": round(point.tokens_per_example, 3),
                    "calls_per_example": round(point.calls_per_example, 3),
                }
                for point in edge
            ],
            "candidates": [c.row() for c in search.candidates if c.scores],
            "plots": [str(path) for path in plots],
            "diff": report.diff(p.flow.text, chosen.text, str(p.flow.path or p.flow.file), str(p.out)),
        }
        result["reports"] = [str(path) for path in report.write(result, f"{stem}.report")]
        return result

    def _scores(self, search: Search) -> dict[str, float]:
        """Run id → score of every dev run, for the studio's experiment page."""
        return {run: c.scores[i] for c in search.candidates for i, run in c.runs.items()}


async def optimize(prepared: Prepared, store: Store, *, progress: Progress | None = None) -> OptimizeResult:
    """Run a prepared optimization to the end; see the module docstring."""
    return await Optimization(prepared, store, progress).run()
