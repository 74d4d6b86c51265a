"""Batch evaluation: a dataset through a flow, every example a run under one experiment.

Examples run with bounded concurrency on an executor (in this process, or Ray tasks) and
are scored on the driver, so a metric sees the same outputs wherever the flow ran. A
failing example is recorded as failed and scored 0. A batch killed part way continues with
`resume=EXPERIMENT_ID`: examples whose run already finished in that experiment are not run
again (their runs are read back and scored), the rest run now.
"""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import json
import math
import statistics
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, Protocol

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from studio.errors import InputError
from studio.evaluate.datasets import Dataset, Example, load_dataset
from studio.evaluate.metrics import LLMJudge, Metric, MetricError, resolve_metric
from studio.flow.spec import load_flow
from studio.runtime.compiler import Plan, compile_flow
from studio.runtime.engine import Engine, RunOptions
from studio.store.base import ExperimentRecord, RunRecord, Store, new_id
from studio.store.memory import MemoryStore

KIND = "batch"
DEFAULT_CONCURRENCY = 8
FIRST_MINIBATCH = 4
"""A batch stops when none of its first max(concurrency, this many) examples succeeds."""
FINISHED = ("succeeded", "failed", "waiting")
Progress = Callable[..., None]
"""Called as progress(done=, total=, score=, cost_usd=, result=, **future_kwargs)."""


@dataclass
class BatchOptions:
    """Everything that decides a batch's results; stored with the experiment so it can resume."""

    flow: str
    data: str
    map_inputs: dict[str, str] = field(default_factory=dict)
    expect: dict[str, str] = field(default_factory=dict)
    metric: str | None = None
    """None: `exact` where an expected column exists, else no score."""
    judge: str | None = None
    rubric: str | None = None
    limit: int | None = None
    models: dict[str, str] = field(default_factory=dict)
    cache: bool = True
    """Serve repeated model calls from the LLM cache."""
    concurrency: int = DEFAULT_CONCURRENCY
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None

    def config(self, plan: Plan, dataset: Dataset) -> dict[str, Any]:
        """The experiment's config: the options with absolute paths, plus what they resolved to."""
        return {
            **asdict(self),
            "flow": str(Path(self.flow).resolve()),
            "data": str(Path(self.data).resolve()),
            "flow_hash": plan.flow.hash,
            "data_sha256": dataset.sha256,
            "inputs": dataset.inputs,
            "expected": dataset.expect,
            "examples": len(dataset.examples),
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> BatchOptions:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in config.items() if k in names})


@dataclass
class Outcome:
    """What an executor reports for one example's run."""

    run_id: str | None
    status: str
    outputs: dict[str, Any] | None
    error: str | None
    tokens: int
    cost_usd: float
    latency_s: float


@dataclass
class ExampleResult:
    index: int
    line: int
    outcome: Outcome
    score: float | None = None
    metric_error: str | None = None
    resumed: bool = False

    def as_json(self, example: Example) -> dict[str, Any]:
        """One line of `--out results.jsonl`."""
        o = self.outcome
        return {
            "index": self.index,
            "line": self.line,
            "run_id": o.run_id,
            "status": o.status,
            "inputs": example.inputs,
            "outputs": o.outputs,
            "expected": example.expected,
            "score": self.score,
            "error": o.error or self.metric_error,
            "tokens": o.tokens,
            "cost_usd": round(o.cost_usd, 10),
            "latency_s": round(o.latency_s, 4),
        }


@dataclass
class BatchResult:
    experiment_id: str
    summary: dict[str, Any]
    results: list[ExampleResult]
    dataset: Dataset

    def write_jsonl(self, path: str | Path) -> None:
        examples = self.dataset.examples
        lines = [json.dumps(r.as_json(examples[r.index]), ensure_ascii=False) for r in self.results]
        Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


class Executor(Protocol):
    """Runs examples and yields each one's outcome as it finishes, in any order."""

    def run(
        self,
        plan: Plan,
        examples: list[Example],
        *,
        experiment_id: str,
        options: RunOptions,
        concurrency: int,
    ) -> AsyncIterator[tuple[Example, Outcome]]: ...


class LocalExecutor:
    """Examples as asyncio tasks in this process, `concurrency` at a time, on one engine."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def run(
        self,
        plan: Plan,
        examples: list[Example],
        *,
        experiment_id: str,
        options: RunOptions,
        concurrency: int,
    ) -> AsyncIterator[tuple[Example, Outcome]]:
        engine = Engine(self.store)
        pending = iter(examples)
        finished: asyncio.Queue[tuple[Example, Outcome]] = asyncio.Queue()

        async def worker() -> None:
            for example in pending:
                finished.put_nowait((example, await _run_one(engine, plan, example, experiment_id, options)))

        workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, len(examples)))]
        try:
            for _ in examples:
                yield await finished.get()
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)


async def _run_one(engine: Engine, plan: Plan, example: Example, experiment_id: str, options: RunOptions) -> Outcome:
    start = time.perf_counter()
    try:
        result = await engine.run(plan, example.inputs, options=copy.copy(options), experiment_id=experiment_id)
    except Exception as err:  # the engine refused the run: the example fails, the batch goes on
        return Outcome(None, "failed", None, f"{type(err).__name__}: {err}", 0, 0.0, time.perf_counter() - start)
    return Outcome(
        result.run_id,
        result.status,
        result.outputs,
        result.error,
        result.tokens,
        result.cost_usd,
        time.perf_counter() - start,
    )


def outcome_of(run: RunRecord) -> Outcome:
    """An example's outcome read back from its stored run (for a resumed batch)."""
    latency = 0.0
    if run.ended_at:
        latency = (dt.datetime.fromisoformat(run.ended_at) - dt.datetime.fromisoformat(run.started_at)).total_seconds()
    return Outcome(run.run_id, run.status, run.outputs, run.error, run.tokens, run.cost_usd, latency)


def input_key(inputs: dict[str, Any]) -> str:
    """An example's identity within an experiment: its flow inputs as canonical JSON."""
    return json.dumps(inputs, sort_keys=True, ensure_ascii=False)


def finished_runs(store: Store, experiment_id: str, examples: list[Example]) -> dict[int, RunRecord]:
    """The finished run of each example that has one, matched by inputs (repeated rows in turn)."""
    by_inputs: dict[str, list[RunRecord]] = {}
    for run in store.runs_of_experiment(experiment_id):
        if run.status in FINISHED:
            by_inputs.setdefault(input_key(run.inputs), []).append(run)
    done: dict[int, RunRecord] = {}
    for example in examples:
        runs = by_inputs.get(input_key(example.inputs))
        if runs:
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
) -> BatchResult:
    """Run every example not yet finished in the experiment, score all, store the summary.

    `experiment_id` names an existing experiment to continue; without it a new one is made
    with `config`.
    """
    started = time.perf_counter()
    if experiment_id is None:
        experiment_id = new_id()
        store.create_experiment(
            ExperimentRecord(experiment_id=experiment_id, kind=KIND, flow=plan.flow.spec.name, config=config or {})
        )
    done = finished_runs(store, experiment_id, dataset.examples)
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
    summary = {
        "experiment_id": experiment_id,
        "flow": plan.flow.spec.name,
        **summarise(ordered, metric, seconds=time.perf_counter() - started, ran=len(fresh)),
    }
    if len(ordered) < len(dataset.examples):
        summary["status"] = "stopped"  # left unfinished, so `batch --resume` can continue it once fixed
        return BatchResult(experiment_id, summary, ordered, dataset)
    scores = {r.outcome.run_id: r.score for r in ordered if r.outcome.run_id and r.score is not None}
    store.finish_experiment(experiment_id, {**summary, "scores": scores})  # per-run scores for the studio
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


def confidence_interval(scores: list[float], z: float = 1.96) -> tuple[float, float]:
    """95% interval of the mean score: Wilson's for 0/1 scores, else the normal one, within [0, 1]."""
    n = len(scores)
    if n == 0:
        return (0.0, 0.0)
    mean = sum(scores) / n
    if all(s in (0.0, 1.0) for s in scores):
        centre = (mean + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(mean * (1 - mean) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    else:
        centre = mean
        half = z * (statistics.stdev(scores) if n > 1 else 0.0) / math.sqrt(n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def percentile(values: Iterable[float], q: float) -> float:
    """Nearest-rank percentile (q in 0-100); 0 for no values."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def summarise(results: list[ExampleResult], metric: Metric | None, *, seconds: float, ran: int) -> dict[str, Any]:
    """The summary stored with the experiment and printed by `batch --json`."""
    n = len(results)
    outcomes = [r.outcome for r in results]
    scores = [r.score for r in results if r.score is not None]
    failed = sum(o.status != "succeeded" for o in outcomes)
    metric_errors = sum(r.metric_error is not None for r in results)
    cost = sum(o.cost_usd for o in outcomes)
    latencies = [o.latency_s for o in outcomes]
    score = sum(scores) / len(scores) if scores else None
    summary: dict[str, Any] = {
        "status": "finished",
        "metric": metric.name if metric else None,
        "examples": n,
        "succeeded": n - failed,
        "failed": failed,
        "metric_errors": metric_errors,
        "errors": failed + metric_errors,
        "score": round(score, 6) if score is not None else None,
        "score_ci": [round(x, 6) for x in confidence_interval(scores)] if scores else None,
        "cost_usd": round(cost, 10),
        "cost_per_example": round(cost / n, 10) if n else 0.0,
        "tokens": sum(o.tokens for o in outcomes),
        "latency_p50_s": round(percentile(latencies, 50), 4),
        "latency_p95_s": round(percentile(latencies, 95), 4),
        "ran": ran,
        "resumed": n - ran,
        "seconds": round(seconds, 3),
        "examples_per_s": round(ran / seconds, 2) if seconds > 0 else None,
    }
    if metric is not None and isinstance(metric.fn, LLMJudge):
        judge = metric.fn
        summary["judge"] = {"calls": judge.calls, "tokens": judge.tokens, "cost_usd": round(judge.cost_usd, 10)}
    return summary


def first_errors(results: list[ExampleResult], limit: int = 5) -> Iterator[str]:
    """Messages of the first failing examples, each naming its row."""
    count = 0
    for result in results:
        message = result.outcome.error if result.outcome.status != "succeeded" else result.metric_error
        if message is None:
            continue
        if count == limit:
            return
        count += 1
        prefix = "" if message.startswith("row ") else f"row {result.line}: "
        yield prefix + message


def first_mismatches(result: BatchResult, limit: int = 3) -> Iterator[str]:
    """The first examples that ran but scored below 1: inputs, expected and what the flow gave."""
    count = 0
    for item in result.results:
        if item.outcome.status != "succeeded" or item.score is None or item.score >= 1.0 or item.metric_error:
            continue
        if count == limit:
            return
        count += 1
        example = result.dataset.examples[item.index]
        outputs = item.outcome.outputs or {}
        got = {name: outputs.get(name) for name in example.expected} if example.expected else outputs
        yield (
            f"row {item.line} (score {item.score:.2f}): inputs {_compact(example.inputs)}, "
            f"expected {_compact(example.expected)}, got {_compact(got)}"
        )


def _compact(value: Any, width: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"


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
    Engine(MemoryStore()).check_models(plan)  # a bad model setting fails here, before any run
    return plan, dataset, metric


def resumed_options(store: Store, experiment_id: str, given: BatchOptions | None) -> BatchOptions:
    """The stored options of an experiment to continue; `given` may only change how it runs."""
    experiment = store.get_experiment(experiment_id)
    if experiment is None or experiment.kind != KIND:
        raise InputError(f"no batch experiment {experiment_id!r} in the store", field="--resume")
    saved = BatchOptions.from_config(experiment.config)
    if given is None:
        return saved
    for name in ("map_inputs", "expect", "metric", "judge", "rubric", "limit", "models"):  # what decides results
        value = getattr(given, name)
        if value not in (None, {}) and value != getattr(saved, name):
            raise InputError(
                f"--resume continues the experiment as it started ({name} = {getattr(saved, name)!r}); "
                "start a new batch to change it",
                field="--resume",
            )
    for name, path in (("flow", given.flow), ("data", given.data)):
        if path and Path(path).resolve() != Path(getattr(saved, name)):
            saved_path = getattr(saved, name)
            raise InputError(f"experiment {experiment_id} ran {saved_path}, not {path}", field="--resume")
    saved.concurrency, saved.executor, saved.ray_address = given.concurrency, given.executor, given.ray_address
    saved.cache = given.cache
    return saved


def check_unchanged(store: Store, experiment_id: str, plan: Plan, dataset: Dataset) -> None:
    """Refuse to mix results of an edited flow or dataset into an experiment."""
    experiment = store.get_experiment(experiment_id)
    assert experiment is not None
    config = experiment.config
    if config.get("flow_hash") != plan.flow.hash:
        raise InputError("the flow changed since the experiment started", file=plan.flow.file, field="--resume")
    if config.get("data_sha256") != dataset.sha256:
        raise InputError("the dataset changed since the experiment started", file=str(dataset.path), field="--resume")


@dataclass
class Prepared:
    """A checked batch, ready to run: nothing has run and nothing is recorded yet."""

    options: BatchOptions
    plan: Plan
    dataset: Dataset
    metric: Metric | None
    resume: str | None = None

    @property
    def examples(self) -> int:
        return len(self.dataset.examples)


def prepare_batch(options: BatchOptions | None, store: Store, *, resume: str | None = None) -> Prepared:
    """Check the flow, dataset, metric and (on resume) the experiment; raises FlowError."""
    if resume is not None:
        options = resumed_options(store, resume, options)
    if options is None:
        raise InputError("a batch needs a flow and --data, or --resume EXPERIMENT_ID")
    plan, dataset, metric = prepare(options)
    if resume is not None:
        check_unchanged(store, resume, plan, dataset)
    return Prepared(options, plan, dataset, metric, resume)


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
    if on_start is not None:
        on_start(experiment_id, prepared.examples)
    executor: Executor | None = None
    if options.executor == "ray":
        from studio.evaluate.ray_executor import RayExecutor

        executor = RayExecutor(store, address=options.ray_address)
    try:
        return await run_batch(
            plan,
            dataset,
            store,
            metric=prepared.metric,
            concurrency=options.concurrency,
            executor=executor,
            experiment_id=experiment_id,
            run_options=RunOptions(cache=options.cache, models=dict(options.models)),
            progress=progress,
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
) -> BatchResult:
    """What `flowstudio batch` does: check everything, then run (or continue) and score."""
    prepared = prepare_batch(options, store, resume=resume)
    return await run_prepared(prepared, store, progress=progress, on_start=on_start)


def experiment_row(record: ExperimentRecord) -> dict[str, Any]:
    """One entry of `flowstudio experiments --json`."""
    summary = record.summary or {}
    return {
        "experiment_id": record.experiment_id,
        "kind": record.kind,
        "flow": record.flow,
        "created_at": record.created_at,
        "status": summary.get("status", "unfinished"),
        "examples": summary.get("examples", record.config.get("examples")),
        "score": summary.get("score"),
        "errors": summary.get("errors"),
        "cost_usd": summary.get("cost_usd"),
    }


def print_experiments(records: list[ExperimentRecord], console: Console | None = None) -> None:
    """Newest first; `kind` only when they are not all batches (it fits 80 columns without)."""
    kinds = len({r.kind for r in records}) > 1 or any(r.kind != KIND for r in records)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("experiment", no_wrap=True)
    if kinds:
        table.add_column("kind")
    table.add_column("flow")
    table.add_column("created", no_wrap=True)
    table.add_column("status", no_wrap=True)
    for name in ("n", "score", "errors", "cost $"):
        table.add_column(name, justify="right", no_wrap=True)
    for record in records:
        row = experiment_row(record)
        table.add_row(
            record.experiment_id,
            *([record.kind] if kinds else []),
            record.flow,
            record.created_at[5:16].replace("T", " "),
            "done" if row["status"] == "finished" else "unfinished",
            "-" if row["examples"] is None else str(row["examples"]),
            "-" if row["score"] is None else f"{row['score']:.3f}",
            "-" if row["errors"] is None else str(row["errors"]),
            "-" if row["cost_usd"] is None else f"{row['cost_usd']:.4f}",
        )
    (console or Console()).print(table)


def print_summary(
    summary: dict[str, Any],
    errors: list[str],
    out: str | None,
    console: Console | None = None,
    mismatches: list[str] | None = None,
) -> None:
    """The table `flowstudio batch` ends with, the first mismatches and the first errors, each naming its row."""
    console = console or Console()
    table = Table(show_header=False, title=f"batch {summary.get('experiment_id', '')} · {summary.get('flow', '')}")
    score = summary.get("score")
    if score is not None:
        low, high = summary["score_ci"]
        table.add_row(f"score ({summary['metric']})", f"{score:.3f}  (95% CI {low:.3f}-{high:.3f})")
    else:
        table.add_row("score", "- (no expected column, no metric)")
    table.add_row(
        "examples",
        f"{summary['examples']} ({summary['resumed']} from before)" if summary["resumed"] else str(summary["examples"]),
    )
    table.add_row(
        "errors", f"{summary['errors']} ({summary['failed']} failed runs, {summary['metric_errors']} metric errors)"
    )
    table.add_row("cost $", f"{summary['cost_usd']:.6f} total, {summary['cost_per_example']:.6f} per example")
    table.add_row("tokens", str(summary["tokens"]))
    table.add_row("latency", f"p50 {summary['latency_p50_s']:.3f} s, p95 {summary['latency_p95_s']:.3f} s per example")
    table.add_row("time", f"{summary['seconds']:.2f} s ({summary['examples_per_s']} examples/s)")
    if "judge" in summary:
        judge = summary["judge"]
        table.add_row("judge", f"{judge['calls']} calls, {judge['tokens']} tokens, ${judge['cost_usd']:.6f}")
    if out:
        table.add_row("results", out)
    console.print(table)
    if summary.get("status") == "stopped":
        console.print(
            f"stopped: all of the first {summary['examples']} examples failed; "
            f"fix the cause, then: flowstudio batch --resume {summary.get('experiment_id', '')}",
            markup=False,
            highlight=False,
        )
    if mismatches:
        console.print("first mismatches:", highlight=False)
        for line in mismatches:
            console.print(Text("  " + line))
    for message in errors:
        console.print(Text.assemble(("error:", "red"), " ", message))
