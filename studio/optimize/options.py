"""What an optimization is asked to do, and the checks it passes before any model call.

Refused with a clear message (exit 2 from the CLI) and no call made: a train set too small to
learn from, a dev or test set without the expected column, a metric that gives 0 even to the
expected values themselves, an unknown proposer alias, a flow with nothing to tune, a budget
too small to evaluate the flow on the dev set and one candidate on a minibatch, and a train set
made mostly of dev examples. A demo must never be an example the candidates are scored on: train
examples whose inputs a dev example has too are left out of train, and one set given as both is
split (a third for dev). Test examples seen in train or dev are counted. Each of these is said in
`Prepared.notes`.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from studio.errors import InputError
from studio.evaluate.batch import input_key
from studio.evaluate.datasets import DataError, Dataset, Example, load_dataset
from studio.evaluate.metrics import LLMJudge, Metric, resolve_metric
from studio.flow.spec import Flow, load_flow
from studio.optimize.candidates import tunable_nodes
from studio.optimize.search import Settings, calls_per_example, overhead_calls
from studio.runtime.compiler import Plan, compile_flow
from studio.runtime.engine import Engine
from studio.runtime.model_checks import require_models
from studio.store.memory import MemoryStore

MIN_TRAIN = 4
MIN_DEV = 2
DEV_EVERY = 3
"""When one set is given as both train and dev, every this-many-th distinct input goes to dev."""
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
    notes: tuple[str, ...] = ()
    """What the checks changed or found that the user should know (printed before the search)."""


def _dataset(path: str, plan: Plan, options: OptimizeOptions) -> Dataset:
    return load_dataset(path, plan, map_inputs=options.map_inputs, expect=options.expect)


def _key(example: Example) -> str:
    return input_key(example.inputs)


def _seen(dataset: Dataset) -> set[str]:
    return {_key(e) for e in dataset.examples}


def _only(dataset: Dataset, examples: list[Example]) -> Dataset:
    """The dataset with only these examples, numbered again from 0 (the search finds an example by
    its index); each keeps its line in the file."""
    return replace(dataset, examples=[replace(e, index=i) for i, e in enumerate(examples)])


def _split(train: Dataset, dev: Dataset) -> tuple[Dataset, Dataset, list[str]]:
    """One set of examples given as both train and dev: every third distinct input (from the
    first) for dev, the rest for train, so that the two share nothing."""
    keys = list(dict.fromkeys(_key(e) for e in dev.examples))
    for_dev = set(keys[::DEV_EVERY])
    dev_part = [e for e in dev.examples if _key(e) in for_dev]
    train_part = [e for e in train.examples if _key(e) not in for_dev]
    note = (
        f"train and dev are the same examples: {len(dev_part)} of them (every third) are dev and {len(train_part)} "
        "are train, so that no demo is an example candidates are scored on"
    )
    return _only(train, train_part), _only(dev, dev_part), [note]


def _apart(train: Dataset, dev: Dataset) -> tuple[Dataset, Dataset, list[str]]:
    """Train and dev with no example in both: train less dev's examples, or one set split in two
    when both are the same; refused when too few train examples are left."""
    in_dev = _seen(dev)
    kept = [e for e in train.examples if _key(e) not in in_dev]
    shared = len(train.examples) - len(kept)
    if not shared:
        return train, dev, []
    if _seen(train) == in_dev and len(in_dev) >= MIN_TRAIN + MIN_DEV:
        return _split(train, dev)
    if len(kept) < MIN_TRAIN:
        raise DataError(
            f"{shared} of the train set's {len(train.examples)} examples are in the dev set too (same inputs), which "
            f"leaves {len(kept)}; the optimizer needs at least {MIN_TRAIN} train examples that dev does not have, "
            "since demos drawn from the examples candidates are scored on would make the dev score meaningless. "
            "Give --train and --dev separate examples",
            file=str(train.path),
        )
    note = f"{shared} train example{'s' if shared != 1 else ''} also in the dev set (same inputs) left out of train"
    return _only(train, kept), dev, [f"{note}, so no demo is an example candidates are scored on"]


def _test_overlap(test: Dataset | None, train: Dataset, dev: Dataset) -> list[str]:
    """A note when test examples are in train or dev too (their test score is not held out)."""
    if test is None:
        return []
    shared = len(_seen(test) & (_seen(train) | _seen(dev)))
    if not shared:
        return []
    return [
        f"{shared} of {len(test.examples)} test examples are in train or dev too: the test score is not all held out"
    ]


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


def needed_calls(plan: Plan, dev: int, asks: int = 0) -> int:
    """The smallest budget that tries a candidate: the flow on the dev set (the score before), then
    the first round's `asks` to the proposer and one candidate on all of dev (where a race ends).
    The search keeps that much back until its first race (`Search.spare`)."""
    per, once = calls_per_example(plan), overhead_calls(plan)
    return 2 * (math.ceil(per * dev) + once) + asks


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
    notes = _test_overlap(test, train, dev)
    train, dev, apart = _apart(train, dev)
    metric = resolve_metric(options.metric, expect=dev.expect, plan=plan, judge=options.judge, rubric=options.rubric)
    check_metric(metric, [train, dev])
    proposer = _proposer_alias(options, plan)
    asks = options.settings().proposals * len(tunable_nodes(flow)) if proposer else 0
    needed = needed_calls(plan, len(dev.examples), asks)
    if options.budget_calls < needed:
        proposals = f", {asks} proposals" if asks else ""
        raise InputError(
            f"a budget of {options.budget_calls} calls is too small to try even one candidate: the flow on the "
            f"{len(dev.examples)} dev examples{proposals} and one candidate on all of them need about {needed} "
            f"calls; give --budget-calls {needed} or more",
            field="--budget-calls",
        )
    if options.budget_usd is not None and options.budget_usd <= 0:
        raise InputError("--budget-usd must be more than 0", field="--budget-usd")
    judges = (options.judge, "judge") if options.metric == "llm_judge" else ()
    require_models(plan, [proposer, *judges])  # a missing key or model is bad input, before any call
    Engine(MemoryStore()).check_models(plan)  # a bad model setting fails here, before any call
    return Prepared(options, flow, plan, train, dev, test, proposer, out, notes=(*apart, *notes))


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
