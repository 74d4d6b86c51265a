"""What an optimization is asked to do, and the checks it passes before any model call.

Refused with a clear message (exit 2 from the CLI) and no call made: a train set too small to
learn from, a dev or test set without the expected column, a metric that gives 0 even to the
expected values themselves, an unknown proposer alias, a flow with nothing to tune, and a budget
too small to evaluate the flow on the dev set and one candidate on a minibatch.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from pathlib import Path

from studio.errors import InputError
from studio.evaluate.datasets import DataError, Dataset, load_dataset
from studio.evaluate.metrics import LLMJudge, Metric, resolve_metric
from studio.flow.spec import Flow, load_flow
from studio.optimize.candidates import tunable_nodes
from studio.optimize.search import Settings, calls_per_example, overhead_calls
from studio.runtime.compiler import Plan, compile_flow
from studio.runtime.engine import Engine
from studio.store.memory import MemoryStore

MIN_TRAIN = 4
MIN_DEV = 2
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
        raise InputError(
            "nothing to optimize: no node in the flow has a tunable surface (llm.generate, llm.classify, ...)",
            file=flow.file,
        )
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
