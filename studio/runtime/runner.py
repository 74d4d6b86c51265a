"""Load, compile and run flow files against a store: what `run`, `resume` and `rerun` do.

The runner owns everything about files and stored runs: it loads the flow file, checks that a
resumed run's file is unchanged (its hash), picks the steps a resume or a rerun keeps, and hands
the engine a compiled plan and those steps. Its errors name neutral fields (`run_id`,
`values.NODE`, `from_node`); the CLI, the server and the studio word them for their users.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from studio.errors import FlowError, InputError
from studio.flow.spec import Flow, load_flow, load_flow_text
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import DEFAULT_MAX_CONCURRENCY, Engine, RunOptions, RunResult
from studio.runtime.hooks import Hook
from studio.store import open_store
from studio.store.base import RunRecord, StepRecord, StepStatus, Store
from studio.telemetry import hooks_for, hooks_from_env
from studio.telemetry.setup import traces_url


class FlowChanged(InputError):
    """A stopped run's flow file changed since it started: resuming it would mix two flows."""


@asynccontextmanager
async def _engine(
    db: str | Path | None, max_concurrency: int | None, hooks: list[Hook] | None, otlp: str | None = None
) -> AsyncIterator[Engine]:
    store = open_store(db)
    exporters = hooks_for(traces_url(otlp)) if otlp else hooks_from_env()  # the caller's collector, else the env's
    try:
        yield Engine(
            store, max_concurrency=max_concurrency or DEFAULT_MAX_CONCURRENCY, hooks=[*(hooks or []), *exporters]
        )
    finally:
        store.close()
        for exporter in exporters:
            exporter.close()


async def run_flow_async(
    flow: str | Path,
    inputs: dict[str, Any],
    *,
    options: RunOptions | None = None,
    model_overrides: dict[str, str] | None = None,
    db: str | Path | None = None,
    max_concurrency: int | None = None,
    hooks: list[Hook] | None = None,
    experiment_id: str | None = None,
    otlp: str | None = None,
) -> RunResult:
    """Validate everything first (nothing runs on bad input), then run and record; `otlp`: the
    OpenTelemetry collector to export to (default: $OTEL_EXPORTER_OTLP_ENDPOINT)."""
    options = options or RunOptions()
    if model_overrides:
        options.models = dict(model_overrides)
    if max_concurrency is not None:
        options.max_concurrency = max_concurrency
    plan = compile_flow(load_flow(flow), options.models)
    async with _engine(db, max_concurrency, hooks, otlp) as engine:
        return await engine.run(plan, inputs, options=options, experiment_id=experiment_id)


async def resume_run_async(
    run_id: str,
    *,
    values: dict[str, Any] | None = None,
    options: RunOptions | None = None,
    db: str | Path | None = None,
    max_concurrency: int | None = None,
    hooks: list[Hook] | None = None,
    otlp: str | None = None,
) -> RunResult:
    """Continue a crashed, failed or waiting run."""
    async with _engine(db, max_concurrency, hooks, otlp) as engine:
        return await resume_on(engine, run_id, values=values, options=options)


async def rerun_async(
    run_id: str,
    from_node: str,
    *,
    options: RunOptions | None = None,
    db: str | Path | None = None,
    max_concurrency: int | None = None,
    hooks: list[Hook] | None = None,
    otlp: str | None = None,
) -> RunResult:
    """Re-execute `from_node` and what depends on it, reusing the rest of `run_id`."""
    async with _engine(db, max_concurrency, hooks, otlp) as engine:
        return await rerun_on(engine, run_id, from_node, options=options)


async def resume_on(
    engine: Engine, run_id: str, *, values: dict[str, Any] | None = None, options: RunOptions | None = None
) -> RunResult:
    """Continue a crashed, failed or waiting run on `engine`: its finished steps are not run again,
    `values` answer its waiting nodes. Refused (InputError) for a finished run or a changed flow file."""
    record = _stored_run(engine.store, run_id)
    if record.status == "succeeded":
        raise InputError(f"run {run_id} already succeeded; there is nothing to resume", field="run_id")
    options = options or RunOptions.of_run(record)
    plan = compile_flow(_same_flow(engine.store, record), options.models)
    steps = engine.store.steps(run_id)
    supplied = _waiting_values(steps, values or {})
    done = sum(1 for step in steps if step.status in ("succeeded", "failed"))
    finished = _latest(steps, {"succeeded", "skipped"})
    return await engine.continue_run(record, plan, finished, options=options, supplied=supplied, steps_done=done)


async def rerun_on(engine: Engine, run_id: str, from_node: str, *, options: RunOptions | None = None) -> RunResult:
    """A new run of `run_id`'s inputs on the flow file as it is now, reusing every step upstream of
    `from_node`."""
    record = _stored_run(engine.store, run_id)
    options = options or RunOptions.of_run(record)
    flow = load_flow(record.flow_path) if record.flow_path else _stored_flow(engine.store, record)
    plan = compile_flow(flow, options.models)
    if from_node not in plan.nodes:
        raise InputError(f"{from_node!r} is not a node of {record.flow}; nodes: {list(plan.nodes)}", field="from_node")
    again = plan.downstream(from_node)
    steps = _latest(engine.store.steps(run_id), {"succeeded", "skipped"})
    reused = {path: step for path, step in steps.items() if _top_node(path) not in again}
    return await engine.run(plan, record.inputs, options=options, parent_run_id=run_id, finished=reused)


def _stored_run(store: Store, run_id: str) -> RunRecord:
    """The run `run_id` (InputError at `run_id` when the store has none)."""
    record = store.get_run(run_id)
    if record is None:
        raise InputError(f"no run {run_id!r} in the store", field="run_id")
    return record


def _latest(steps: list[StepRecord], statuses: set[StepStatus]) -> dict[str, StepRecord]:
    """The last step of each node path, kept when its status is in `statuses`."""
    last = {step.node: step for step in steps}
    return {path: step for path, step in last.items() if step.status in statuses}


def _stored_flow(store: Store, record: RunRecord) -> Flow:
    text = store.flow_text(record.run_id)
    if text is None:
        raise InputError(f"run {record.run_id} has no stored flow", field="run_id")
    return load_flow_text(text, file=f"<run {record.run_id}>")


def _same_flow(store: Store, record: RunRecord) -> Flow:
    """The run's flow, refused when its file no longer loads or has changed since the run started."""
    if record.flow_path is None:
        return _stored_flow(store, record)
    try:
        flow = load_flow(record.flow_path)
    except FlowError as err:
        raise InputError(f"cannot resume: {err}", file=record.flow_path) from None
    if flow.hash != record.flow_hash:
        raise FlowChanged("the flow file changed since this run started; resume refused", file=record.flow_path)
    return flow


def _top_node(path: str) -> str:
    """`map[2].child` → `map`."""
    return path.split(".", 1)[0].split("[", 1)[0]


def _waiting_values(steps: list[StepRecord], values: dict[str, Any]) -> dict[str, Any]:
    """`values`, each for a node the run waits on (InputError at `values.NODE` for another)."""
    waiting = set(_latest(steps, {"waiting"}))
    for node in values:
        if node not in waiting:
            where = f"; waiting: {sorted(waiting)}" if waiting else "; the run is not waiting for input"
            raise InputError(f"that node is not waiting for input{where}", field=f"values.{node}")
    return values


def run_flow(flow: str | Path, inputs: dict[str, Any], **kwargs: Any) -> RunResult:
    """Synchronous `run_flow_async`."""
    return asyncio.run(run_flow_async(flow, inputs, **kwargs))
