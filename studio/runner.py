"""Load, compile and run a flow file against a store: what `flowstudio run` does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from studio.compiler import compile_flow
from studio.engine import DEFAULT_MAX_CONCURRENCY, Engine, Hook, RunResult
from studio.spec import load_flow
from studio.store import SQLiteStore, default_db_path


async def run_flow_async(
    flow: str | Path,
    inputs: dict[str, Any],
    *,
    model_overrides: dict[str, str] | None = None,
    db: str | Path | None = None,
    max_concurrency: int | None = None,
    hooks: list[Hook] | None = None,
) -> RunResult:
    """Validate everything first (nothing runs on bad input), then run and record."""
    plan = compile_flow(load_flow(flow), model_overrides)
    store = SQLiteStore(Path(db) if db else default_db_path())
    try:
        engine = Engine(store, max_concurrency=max_concurrency or DEFAULT_MAX_CONCURRENCY, hooks=hooks)
        return await engine.run(plan, inputs, options={"models": model_overrides or {}})
    finally:
        store.close()


def run_flow(flow: str | Path, inputs: dict[str, Any], **kwargs: Any) -> RunResult:
    """Synchronous `run_flow_async`."""
    import asyncio

    return asyncio.run(run_flow_async(flow, inputs, **kwargs))
