"""`batch --executor ray`: each example is a Ray task; the driver gathers the runs into its store.

A task compiles the flow from its text (so workers need flowstudio installed, not the flow
file), runs the example on an in-memory store and returns the finished run with its steps
and model calls as plain JSON-ready data. The driver writes each run into its own store in
one transaction (`Store.import_run`), so `runs`, `trace` and `--resume` see Ray runs exactly
like local ones, and scores them itself, so the scores equal a local run's.

Without an address a local Ray runtime is started (and shut down at the end); with
`--ray-address` the batch joins an existing cluster. Needs the `ray` extra.

The LLM cache goes through the driver: a task asks a cache actor the driver owns (pinned to the
driver's node, reading the driver's SQLite store) before each model call, and returns the replies
it paid for with its run; the driver writes them into its store and hands them to the actor, so
later tasks of the batch, and every task of a repeated batch, are served without a call.

On a PostgreSQL store (`--db postgresql://...`) nothing goes through the driver: each worker
process opens the store itself (once, kept for its later tasks) and its engine writes the run, its
steps and calls as a local run would (each step committed before its dependents start), and reads
and writes the shared LLM cache there. A task returns only what the driver scores (the run's row
and its call counts); the workers must reach the database server.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from studio.errors import InputError
from studio.evaluate.datasets import Example
from studio.evaluate.executors import Outcome
from studio.flow.spec import load_flow_text
from studio.runtime.compiler import Plan, compile_flow
from studio.runtime.engine import Engine, RunOptions
from studio.store.base import CallRecord, RunRecord, StepRecord, Store
from studio.store.memory import MemoryStore
from studio.store.sqlite import SQLiteStore

_plans: dict[tuple[str, str, tuple[tuple[str, str], ...]], Plan] = {}
"""Compiled plans per worker process, so a worker compiles each flow once."""
_stores: dict[str, Store] = {}
"""Per worker process: the PostgreSQL store each URL names, opened by the first task that needs it."""


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputError("--executor ray needs Ray: pip install 'flowstudio[ray]'", field="--executor") from None
    return ray


class CacheService:
    """The driver's LLM cache, served to Ray tasks (a Ray actor on the driver's node)."""

    def __init__(self, db: str | None) -> None:
        self.store = SQLiteStore(db, group_commit=False) if db else None
        self.entries: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached reply for `key`: one the driver was handed this batch, else its store's."""
        if key in self.entries:
            return self.entries[key]
        return self.store.cache_get(key) if self.store else None

    def put(self, entries: list[tuple[str, str, dict[str, Any]]]) -> None:
        """Replies the driver has just written into its store."""
        self.entries.update((key, response) for key, _, response in entries)


class _RecordingStore(MemoryStore):
    """A memory store that keeps each step with its own model calls, and the replies the task
    paid for; cache reads go to the driver's cache service."""

    def __init__(self, cache: Any) -> None:
        super().__init__()
        self.pairs: list[tuple[StepRecord, list[CallRecord]]] = []
        self.paid: list[tuple[str, str, dict[str, Any]]] = []
        self.service = cache

    def finish_step(self, run_id: str, step: StepRecord, calls: list[CallRecord]) -> None:
        super().finish_step(run_id, step, calls)
        self.pairs.append((step, list(calls)))

    def cache_get(self, key: str) -> dict[str, Any] | None:
        hit = super().cache_get(key)
        if hit is None and self.service is not None:
            hit = _ray().get(self.service.get.remote(key))
        return hit

    def cache_put(self, key: str, model: str, response: dict[str, Any]) -> None:
        super().cache_put(key, model, response)
        self.paid.append((key, model, response))


def _plan(flow_text: str, flow_path: str | None, run_options: RunOptions) -> Plan:
    key = (flow_text, flow_path or "", tuple(sorted(run_options.models.items())))
    plan = _plans.get(key)
    if plan is None:
        path = Path(flow_path) if flow_path else None
        plan = _plans[key] = compile_flow(load_flow_text(flow_text, flow_path or "<flow>", path), run_options.models)
    return plan


def _shared_store(url: str) -> Store:
    """This worker's store on the PostgreSQL server at `url`."""
    store = _stores.get(url)
    if store is None:
        from studio.store.postgres import PostgresStore

        store = _stores[url] = PostgresStore(url)
    return store


def run_on_store(
    flow_text: str, flow_path: str | None, inputs: dict[str, Any], options: dict[str, Any], experiment_id: str, url: str
) -> dict[str, Any]:
    """The Ray task on a shared store: run one example writing straight into the PostgreSQL store
    at `url` (cache included); return the run's row and its call counts."""
    run_options = RunOptions.from_json(options)
    plan = _plan(flow_text, flow_path, run_options)
    store = _shared_store(url)
    start = time.perf_counter()
    result = asyncio.run(Engine(store).run(plan, inputs, options=run_options, experiment_id=experiment_id))
    latency = time.perf_counter() - start
    run = store.get_run(result.run_id)
    assert run is not None
    calls = store.calls(result.run_id)
    return {
        "run": asdict(run),
        "written": True,
        "calls": len(calls),
        "cache_hits": sum(call.cache_hit for call in calls),
        "latency_s": latency,
    }


def run_example(
    flow_text: str,
    flow_path: str | None,
    inputs: dict[str, Any],
    options: dict[str, Any],
    experiment_id: str,
    cache: Any = None,
) -> dict[str, Any]:
    """The Ray task: run one example, return the run, its steps and calls as plain data."""
    run_options = RunOptions.from_json(options)
    plan = _plan(flow_text, flow_path, run_options)
    store = _RecordingStore(cache if run_options.cache else None)
    start = time.perf_counter()
    result = asyncio.run(Engine(store).run(plan, inputs, options=run_options, experiment_id=experiment_id))
    latency = time.perf_counter() - start
    run = store.get_run(result.run_id)
    assert run is not None
    return {
        "run": asdict(run),
        "steps": [{"step": asdict(step), "calls": [asdict(c) for c in calls]} for step, calls in store.pairs],
        "latency_s": latency,
        "cache": store.paid,
    }


class RayExecutor:
    """Examples as Ray tasks, at most `concurrency` in flight; results written to the driver's store
    (on PostgreSQL: by the workers themselves)."""

    def __init__(self, store: Store, *, address: str | None = None, num_cpus: int | None = None) -> None:
        self.store = store
        self.ray = _ray()
        self.started_here = not self.ray.is_initialized()
        if self.started_here:
            settings: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address:
                settings["address"] = address
            elif num_cpus:
                settings["num_cpus"] = num_cpus
            self.ray.init(**settings)
        url = getattr(store, "url", None)
        self.shared_url: str | None = url if isinstance(url, str) and url.startswith("postgres") else None
        """The PostgreSQL URL the workers write to themselves; None: they return runs to the driver."""
        if self.shared_url is not None:
            self.task, self.cache = self.ray.remote(run_on_store), None
        else:
            self.task = self.ray.remote(run_example)
            self.cache = self._cache_service()

    def _cache_service(self) -> Any:
        """The cache actor, on the driver's node so it can open the driver's SQLite file."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = NodeAffinitySchedulingStrategy(self.ray.get_runtime_context().get_node_id(), soft=False)
        db = getattr(self.store, "path", None)
        service = self.ray.remote(CacheService).options(scheduling_strategy=here, num_cpus=0)
        return service.remote(str(db) if db else None)

    async def run(
        self,
        plan: Plan,
        examples: list[Example],
        *,
        experiment_id: str,
        options: RunOptions,
        concurrency: int,
    ) -> AsyncIterator[tuple[Example, Outcome]]:
        """Run each example as a Ray task; yield each (example, outcome) as it finishes."""
        flow = plan.flow
        flow_path = str(flow.path) if flow.path else None
        settings = asdict(options)
        pending = iter(examples)
        in_flight: dict[asyncio.Future[Any], Example] = {}

        def submit() -> None:
            for example in pending:
                last = self.shared_url if self.shared_url is not None else self.cache
                ref = self.task.remote(flow.text, flow_path, example.inputs, settings, experiment_id, last)
                in_flight[asyncio.wrap_future(ref.future())] = example
                if len(in_flight) >= concurrency:
                    return

        submit()
        try:
            while in_flight:
                finished, _ = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                for future in finished:
                    example = in_flight.pop(future)
                    yield example, self._gather(future, flow.text)
                submit()
        finally:
            for future in in_flight:
                future.cancel()

    def _gather(self, future: asyncio.Future[Any], flow_text: str) -> Outcome:
        """Write a finished task's run into the store; a task that died is a failed example."""
        try:
            data = future.result()
        except Exception as err:
            return Outcome(None, "failed", None, f"ray task failed: {type(err).__name__}: {err}", 0, 0.0, 0.0)
        run = RunRecord(**data["run"])
        if data.get("written"):  # the worker wrote it into the shared store
            return Outcome(
                run.run_id, run.status, run.outputs, run.error, run.tokens, run.cost_usd, data["latency_s"],
                calls=data["calls"], cache_hits=data["cache_hits"],
            )  # fmt: skip
        steps = [(StepRecord(**s["step"]), [CallRecord(**c) for c in s["calls"]]) for s in data["steps"]]
        self.store.import_run(run, flow_text, steps)
        paid = [(key, model, response) for key, model, response in data.get("cache", [])]
        for key, model, response in paid:
            self.store.cache_put(key, model, response)
        if paid and self.cache is not None:
            self.cache.put.remote(paid)
        calls = [call for _, made in steps for call in made]
        return Outcome(
            run.run_id, run.status, run.outputs, run.error, run.tokens, run.cost_usd, data["latency_s"],
            calls=len(calls), cache_hits=sum(call.cache_hit for call in calls),
        )  # fmt: skip

    def close(self) -> None:
        """Shut Ray down when this executor started it."""
        if self.started_here and self.ray.is_initialized():
            self.ray.shutdown()
