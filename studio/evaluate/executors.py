"""Executors run a batch's examples and report each one's outcome: in this process (here) or
as Ray tasks (`studio.evaluate.ray_executor`)."""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from studio.evaluate.datasets import Example
from studio.runtime.compiler import Plan
from studio.runtime.engine import Engine, RunOptions
from studio.store.base import RunRecord, Store
from studio.telemetry import hooks_from_env


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
    calls: int = 0
    """Model calls the run made in this process (0 for a run read back from the store)."""
    cache_hits: int = 0
    """Of those, the ones the LLM cache answered."""
    error_kind: str | None = None
    """Why a failed run failed, by kind (`rate_limit`, `server`, `timeout`, `auth`, ...)."""


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
    ) -> AsyncIterator[tuple[Example, Outcome]]:
        """Run `examples` under `experiment_id`, `concurrency` at a time; yield each (example, outcome) as it finishes."""
        ...


class LocalExecutor:
    """Examples as asyncio tasks in this process, `concurrency` at a time, on one engine."""

    def __init__(self, store: Store, *, warm_cascade: bool = False) -> None:
        self.store = store
        self.warm_cascade = warm_cascade
        """Cascades ask their teacher alone (`batch --warm-cascade`)."""

    async def run(
        self,
        plan: Plan,
        examples: list[Example],
        *,
        experiment_id: str,
        options: RunOptions,
        concurrency: int,
    ) -> AsyncIterator[tuple[Example, Outcome]]:
        """Run the examples as asyncio tasks on one engine over this store."""
        exporters = hooks_from_env()  # OTLP export when OTEL_EXPORTER_OTLP_ENDPOINT is set
        engine = Engine(self.store, hooks=exporters)
        engine.memories.warming = self.warm_cascade
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
            for exporter in exporters:
                exporter.close()


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
        calls=sum(s.calls for s in result.steps),
        cache_hits=sum(s.cache_hits for s in result.steps),
    )


def outcome_of(run: RunRecord) -> Outcome:
    """An example's outcome read back from its stored run (for a resumed batch)."""
    latency = 0.0
    if run.ended_at:
        latency = (dt.datetime.fromisoformat(run.ended_at) - dt.datetime.fromisoformat(run.started_at)).total_seconds()
    return Outcome(run.run_id, run.status, run.outputs, run.error, run.tokens, run.cost_usd, latency)
