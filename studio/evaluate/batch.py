"""Batch evaluation: a dataset through a flow, every example a run under one experiment.

Examples run with bounded concurrency on an executor (in this process, or Ray tasks) and
are scored on the driver, so a metric sees the same outputs wherever the flow ran. A
failing example is recorded as failed and scored 0. A batch killed part way continues with
`resume=EXPERIMENT_ID`: examples whose run already finished in that experiment are not run
again (their runs are read back and scored), the rest run now.

The parts: `options` (what a batch is), `executors` (where examples run; Ray in
`ray_executor`), `summary` (results and the typed summary), `reports` (the printed tables).
Everything the CLI and the app use stays importable from here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from studio.errors import InputError
from studio.evaluate.datasets import Dataset, Example, load_dataset
from studio.evaluate.executors import Executor, LocalExecutor, Outcome, outcome_of
from studio.evaluate.live import tagged
from studio.evaluate.metrics import Metric, MetricError, resolve_metric
from studio.evaluate.options import DEFAULT_CONCURRENCY, KIND, BatchOptions, check_unchanged, resumed_options
from studio.evaluate.reports import experiment_row, print_experiments, print_summary
from studio.evaluate.summary import (
    BatchSummary,
    ExampleResult,
    classify_failures,
    confidence_interval,
    first_errors,
    first_mismatches,
    percentile,
    summarise,
)
from studio.flow.spec import load_flow
from studio.runtime.compiler import Plan, compile_flow
from studio.runtime.engine import Engine, RunOptions
from studio.runtime.model_checks import require_models
from studio.store.base import ExperimentRecord, RunRecord, Store, new_id
from studio.store.memory import MemoryStore

__all__ = [
    "DEFAULT_CONCURRENCY",
    "KIND",
    "BatchOptions",
    "BatchResult",
    "BatchSummary",
    "ExampleResult",
    "Executor",
    "LocalExecutor",
    "Outcome",
    "Prepared",
    "batch",
    "check_unchanged",
    "confidence_interval",
    "experiment_row",
    "finished_runs",
    "first_errors",
    "first_mismatches",
    "input_key",
    "outcome_of",
    "percentile",
    "prepare",
    "prepare_batch",
    "print_experiments",
    "print_summary",
    "resumed_options",
    "run_batch",
    "run_prepared",
    "score_example",
    "summarise",
]

FIRST_MINIBATCH = 4
"""A batch stops when none of its first max(concurrency, this many) examples succeeds."""
FINISHED = ("succeeded", "failed", "waiting")
Progress = Callable[..., None]
"""Called as progress(done=, total=, score=, cost_usd=, result=, **future_kwargs)."""


@dataclass
class BatchResult:
    """What a batch returns: its summary and each example's result, in dataset order."""

    experiment_id: str
    summary: BatchSummary
    results: list[ExampleResult]
    dataset: Dataset

    def write_jsonl(self, path: str | Path) -> None:
        """Write one JSON line per example (`--out results.jsonl`)."""
        examples = self.dataset.examples
        lines = [json.dumps(r.as_json(examples[r.index]), ensure_ascii=False) for r in self.results]
        Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def input_key(inputs: dict[str, Any]) -> str:
    """An example's identity within an experiment: its flow inputs as canonical JSON."""
    return json.dumps(inputs, sort_keys=True, ensure_ascii=False)


def finished_runs(
    store: Store, experiment_id: str, examples: list[Example], *, retry_errors: bool = False
) -> dict[int, RunRecord]:
    """The finished run of each example that has one, matched by inputs (repeated rows in turn).

    A run that did not fail counts before a failed one (an example run again by `--retry-errors`
    is its new run), the latest failed one first; with `retry_errors`, failed runs do not count.
    """
    by_inputs: dict[str, list[RunRecord]] = {}
    for run in store.runs_of_experiment(experiment_id):
        if run.status in FINISHED:
            by_inputs.setdefault(input_key(run.inputs), []).append(run)
    for found in by_inputs.values():
        found[:] = [r for r in found if r.status != "failed"] + [r for r in reversed(found) if r.status == "failed"]
    done: dict[int, RunRecord] = {}
    for example in examples:
        runs = by_inputs.get(input_key(example.inputs))
        if runs and not (retry_errors and runs[0].status == "failed"):
            done[example.index] = runs.pop(0)
    return done


async def score_example(metric: Metric | None, example: Example, result: ExampleResult) -> None:
    """Score one finished example in place: a failed run scores 0, a metric error scores 0."""
    if metric is None:
        return
    outcome = result.outcome
    if outcome.status != "succeeded" or outcome.outputs is None:
        result.score = 0.0
        return
    try:
        result.score = await metric.score(example.row, outcome.outputs)
    except MetricError as err:
        result.score, result.metric_error = 0.0, f"row {example.line}: {err}"


async def run_batch(
    plan: Plan,
    dataset: Dataset,
    store: Store,
    *,
    metric: Metric | None,
    concurrency: int = DEFAULT_CONCURRENCY,
    executor: Executor | None = None,
    experiment_id: str | None = None,
    config: dict[str, Any] | None = None,
    run_options: RunOptions | None = None,
    progress: Progress | None = None,
    retry_errors: bool = False,
) -> BatchResult:
    """Run every example not yet finished in the experiment, score all, store the summary.

    `experiment_id` names an existing experiment to continue; without it a new one is made
    with `config`. `retry_errors` runs the examples whose run failed again, too.
    """
    started = time.perf_counter()
    if experiment_id is None:
        experiment_id = new_id()
        store.create_experiment(
            ExperimentRecord(experiment_id=experiment_id, kind=KIND, flow=plan.flow.spec.name, config=config or {})
        )
    done = finished_runs(store, experiment_id, dataset.examples, retry_errors=retry_errors)
    results: dict[int, ExampleResult] = {}
    total = len(dataset.examples)
    tally = _Tally(total)
    for example in dataset.examples:
        if example.index in done:
            result = ExampleResult(example.index, example.line, outcome_of(done[example.index]), resumed=True)
            await score_example(metric, example, result)
            results[example.index] = result
            tally.add(result)
    _report(progress, tally, None)
    todo = [e for e in dataset.examples if e.index not in done]
    options = run_options or RunOptions()
    runner = executor or LocalExecutor(store)
    first = min(len(todo), max(concurrency, FIRST_MINIBATCH))
    fresh: list[ExampleResult] = []
    stream = runner.run(plan, todo, experiment_id=experiment_id, options=options, concurrency=concurrency)
    try:
        async for example, outcome in stream:
            result = ExampleResult(example.index, example.line, outcome)
            await score_example(metric, example, result)
            results[example.index] = result
            fresh.append(result)
            tally.add(result)
            _report(progress, tally, result)
            if len(fresh) == first and all(r.outcome.status != "succeeded" for r in fresh):
                break  # nothing succeeds: the rest would fail the same way
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
    ordered = [results[e.index] for e in dataset.examples if e.index in results]
    classify_failures(store, ordered)
    seconds = time.perf_counter() - started
    summary = summarise(
        ordered, metric, experiment_id=experiment_id, flow=plan.flow.spec.name, seconds=seconds, ran=len(fresh)
    )
    if len(ordered) < len(dataset.examples):
        # left unfinished, so `batch --resume` can continue it once fixed
        return BatchResult(experiment_id, replace(summary, status="stopped"), ordered, dataset)
    scores = {r.outcome.run_id: r.score for r in ordered if r.outcome.run_id and r.score is not None}
    store.finish_experiment(experiment_id, tagged({**summary, "scores": scores}))  # per-run scores for the studio
    return BatchResult(experiment_id, summary, ordered, dataset)


class _Tally:
    """Running totals for the progress bar."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.score_sum, self.scored, self.cost_usd = total, 0, 0.0, 0, 0.0

    def add(self, result: ExampleResult) -> None:
        self.done += 1
        self.cost_usd += result.outcome.cost_usd
        if result.score is not None:
            self.score_sum += result.score
            self.scored += 1

    @property
    def score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None


def _report(progress: Progress | None, tally: _Tally, result: ExampleResult | None) -> None:
    if progress is not None:
        progress(done=tally.done, total=tally.total, score=tally.score, cost_usd=tally.cost_usd, result=result)


def prepare(options: BatchOptions) -> tuple[Plan, Dataset, Metric | None]:
    """Load and check the flow, the dataset and the metric; nothing runs. Raises FlowError."""
    plan = compile_flow(load_flow(options.flow), options.models)
    dataset = load_dataset(
        options.data, plan, map_inputs=options.map_inputs, expect=options.expect, limit=options.limit
    )
    name = options.metric or ("exact" if dataset.expect else None)
    metric = None
    if name is not None:
        metric = resolve_metric(name, expect=dataset.expect, plan=plan, judge=options.judge, rubric=options.rubric)
    require_models(plan, (options.judge, "judge") if name == "llm_judge" else ())  # keys and local models
    Engine(MemoryStore()).check_models(plan)  # a bad model setting fails here, before any run
    return plan, dataset, metric


@dataclass
class Prepared:
    """A checked batch, ready to run: nothing has run and nothing is recorded yet."""

    options: BatchOptions
    plan: Plan
    dataset: Dataset
    metric: Metric | None
    resume: str | None = None
    retry_errors: bool = False
    """On resume, run the examples whose run failed again too."""
    experiment_id: str | None = None
    """The experiment once the batch has started (the one it resumes, or a new one)."""

    @property
    def examples(self) -> int:
        return len(self.dataset.examples)


def prepare_batch(
    options: BatchOptions | None, store: Store, *, resume: str | None = None, retry_errors: bool = False
) -> Prepared:
    """Check the flow, dataset, metric and (on resume) the experiment; raises FlowError."""
    if retry_errors and resume is None:
        raise InputError("--retry-errors runs a batch's failed examples again: give --resume EXPERIMENT_ID too")
    if resume is not None:
        options = resumed_options(store, resume, options)
    if options is None:
        raise InputError("a batch needs a flow and --data, or --resume EXPERIMENT_ID")
    plan, dataset, metric = prepare(options)
    if resume is not None:
        check_unchanged(store, resume, plan, dataset)
    return Prepared(options, plan, dataset, metric, resume, retry_errors)


async def run_prepared(
    prepared: Prepared,
    store: Store,
    *,
    progress: Progress | None = None,
    on_start: Callable[[str, int], None] | None = None,
) -> BatchResult:
    """Run a prepared batch: a new experiment, or the rest of the one it resumes."""
    options, plan, dataset = prepared.options, prepared.plan, prepared.dataset
    config = options.config(plan, dataset)
    experiment_id = prepared.resume
    if experiment_id is None:
        experiment_id = new_id()
        record = ExperimentRecord(experiment_id=experiment_id, kind=KIND, flow=plan.flow.spec.name, config=config)
        store.create_experiment(record)
    prepared.experiment_id = experiment_id
    if on_start is not None:
        on_start(experiment_id, prepared.examples)
    executor: Executor | None = None
    if options.executor == "ray":
        from studio.evaluate.ray_executor import RayExecutor

        executor = RayExecutor(store, address=options.ray_address)
    elif options.warm_cascade:
        executor = LocalExecutor(store, warm_cascade=True)
    try:
        return await run_batch(
            plan,
            dataset,
            store,
            metric=prepared.metric,
            concurrency=options.concurrency,
            executor=executor,
            experiment_id=experiment_id,
            run_options=RunOptions(cache=options.cache, models=dict(options.models), version=options.version),
            progress=progress,
            retry_errors=prepared.retry_errors,
        )
    finally:
        close = getattr(executor, "close", None)
        if close is not None:
            close()


async def batch(
    options: BatchOptions | None,
    store: Store,
    *,
    resume: str | None = None,
    progress: Progress | None = None,
    on_start: Callable[[str, int], None] | None = None,
    retry_errors: bool = False,
) -> BatchResult:
    """What `flowstudio batch` does: check everything, then run (or continue) and score."""
    prepared = prepare_batch(options, store, resume=resume, retry_errors=retry_errors)
    return await run_prepared(prepared, store, progress=progress, on_start=on_start)
