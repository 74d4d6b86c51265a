"""Load, compile and run flow files against a store: what `run`, `resume` and `rerun` do."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from studio.flow.spec import load_flow
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import DEFAULT_MAX_CONCURRENCY, Engine, RunOptions, RunResult
from studio.runtime.hooks import Hook
from studio.store import open_store
from studio.telemetry import hooks_from_env


@asynccontextmanager
async def _engine(
    db: str | Path | None, max_concurrency: int | None, hooks: list[Hook] | None
) -> AsyncIterator[Engine]:
    store = open_store(db)
    exporters = hooks_from_env()  # OTLP export when OTEL_EXPORTER_OTLP_ENDPOINT is set
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
) -> RunResult:
    """Validate everything first (nothing runs on bad input), then run and record."""
    options = options or RunOptions()
    if model_overrides:
        options.models = dict(model_overrides)
    if max_concurrency is not None:
        options.max_concurrency = max_concurrency
    plan = compile_flow(load_flow(flow), options.models)
    async with _engine(db, max_concurrency, hooks) as engine:
        return await engine.run(plan, inputs, options=options, experiment_id=experiment_id)


async def resume_run_async(
    run_id: str,
    *,
    values: dict[str, Any] | None = None,
    options: RunOptions | None = None,
    db: str | Path | None = None,
    max_concurrency: int | None = None,
    hooks: list[Hook] | None = None,
) -> RunResult:
    """Continue a crashed, failed or waiting run."""
    async with _engine(db, max_concurrency, hooks) as engine:
        return await engine.resume(run_id, values=values, options=options)


async def rerun_async(
    run_id: str,
    from_node: str,
    *,
    options: RunOptions | None = None,
    db: str | Path | None = None,
    max_concurrency: int | None = None,
    hooks: list[Hook] | None = None,
) -> RunResult:
    """Re-execute `from_node` and what depends on it, reusing the rest of `run_id`."""
    async with _engine(db, max_concurrency, hooks) as engine:
        return await engine.rerun(run_id, from_node, options=options)


def run_flow(flow: str | Path, inputs: dict[str, Any], **kwargs: Any) -> RunResult:
    """Synchronous `run_flow_async`."""
    return asyncio.run(run_flow_async(flow, inputs, **kwargs))
