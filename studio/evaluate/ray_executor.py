"""`batch --executor ray`: each example is a Ray task; the driver gathers the runs into its store.

A task compiles the flow from its text (so workers need flowstudio installed, not the flow
file), runs the example on an in-memory store and returns the finished run with its steps
and model calls as plain JSON-ready data. The driver writes each run into its own store in
one transaction (`Store.import_run`), so `runs`, `trace` and `--resume` see Ray runs exactly
like local ones, and scores them itself, so the scores equal a local run's.

Without an address a local Ray runtime is started (and shut down at the end); with
`--ray-address` the batch joins an existing cluster. Needs the `ray` extra.
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

_plans: dict[tuple[str, str, tuple[tuple[str, str], ...]], Plan] = {}
"""Compiled plans per worker process, so a worker compiles each flow once."""


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputError("--executor ray needs Ray: pip install 'flowstudio[ray]'", field="--executor") from None
    return ray


class _RecordingStore(MemoryStore):
    """A memory store that also keeps each step with its own model calls, for the driver."""

    def __init__(self) -> None:
        super().__init__()
        self.pairs: list[tuple[StepRecord, list[CallRecord]]] = []

    def finish_step(self, run_id: str, step: StepRecord, calls: list[CallRecord]) -> None:
        super().finish_step(run_id, step, calls)
        self.pairs.append((step, list(calls)))


def run_example(
    flow_text: str, flow_path: str | None, inputs: dict[str, Any], options: dict[str, Any], experiment_id: str
) -> dict[str, Any]:
    """The Ray task: run one example, return the run, its steps and calls as plain data."""
    run_options = RunOptions.from_json(options)
    key = (flow_text, flow_path or "", tuple(sorted(run_options.models.items())))
    plan = _plans.get(key)
    if plan is None:
        path = Path(flow_path) if flow_path else None
        plan = _plans[key] = compile_flow(load_flow_text(flow_text, flow_path or "<flow>", path), run_options.models)
    store = _RecordingStore()
    start = time.perf_counter()
    result = asyncio.run(Engine(store).run(plan, inputs, options=run_options, experiment_id=experiment_id))
    latency = time.perf_counter() - start
    run = store.get_run(result.run_id)
    assert run is not None
    return {
        "run": asdict(run),
        "steps": [{"step": asdict(step), "calls": [asdict(c) for c in calls]} for step, calls in store.pairs],
        "latency_s": latency,
    }


class RayExecutor:
    """Examples as Ray tasks, at most `concurrency` in flight; results written to the driver's store."""

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
        self.task = self.ray.remote(run_example)

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
                ref = self.task.remote(flow.text, flow_path, example.inputs, settings, experiment_id)
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
        steps = [(StepRecord(**s["step"]), [CallRecord(**c) for c in s["calls"]]) for s in data["steps"]]
        self.store.import_run(run, flow_text, steps)
        return Outcome(run.run_id, run.status, run.outputs, run.error, run.tokens, run.cost_usd, data["latency_s"])

    def close(self) -> None:
        """Shut Ray down when this executor started it."""
        if self.started_here and self.ray.is_initialized():
            self.ray.shutdown()
