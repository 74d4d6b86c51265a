"""The engine: runs a Plan on asyncio, every ready node at once, bounded by max_concurrency.

It records one step per node execution in the store and never imports the studio app.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from studio import templates
from studio.compiler import Plan, PlanNode
from studio.errors import InputError, NodeError
from studio.llm import BoundLLM, NoModel
from studio.models import client_for
from studio.models.base import ModelClient
from studio.node import NodeContext
from studio.refs import FLOW_INPUTS, Ref, substitute
from studio.store.base import CallRecord, RunRecord, RunStatus, StepRecord, Store, new_id, now

DEFAULT_MAX_CONCURRENCY = 100
Hook = Callable[..., None]


class _Skipped:
    """Marker for a node that did not run; reads as null downstream."""

    def __repr__(self) -> str:
        return "SKIPPED"


SKIPPED = _Skipped()


@dataclass
class StepSummary:
    node: str
    status: str
    attempt: int
    tokens: int
    cost_usd: float
    seconds: float
    error: str | None = None


@dataclass
class RunResult:
    """What `flowstudio run --json` prints."""

    run_id: str
    status: str
    outputs: dict[str, Any] | None
    error: str | None
    tokens: int
    cost_usd: float
    steps: list[StepSummary] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "outputs": self.outputs,
            "error": self.error,
            "tokens": self.tokens,
            "cost_usd": round(self.cost_usd, 10),
            "steps": [vars(s) for s in self.steps],
        }


def prepare_inputs(plan: Plan, given: dict[str, Any]) -> dict[str, Any]:
    """Check and complete run inputs against the flow's declared inputs; raises InputError."""
    file = plan.flow.file
    unknown = sorted(set(given) - set(plan.inputs))
    if unknown:
        raise InputError(
            f"unknown input {unknown[0]!r}; the flow declares {sorted(plan.inputs)}",
            file=file,
            field=f"inputs.{unknown[0]}",
        )
    values: dict[str, Any] = {}
    for name, spec in plan.inputs.items():
        if name not in given:
            if spec.required:
                raise InputError(f"input {name!r} is required ({spec.type})", file=file, field=f"inputs.{name}")
            values[name] = spec.default
            continue
        try:
            values[name] = TypeAdapter(plan.input_types[name].python()).validate_python(given[name])
        except ValidationError as err:
            message = err.errors(include_url=False)[0]["msg"]
            raise InputError(
                f"input {name!r} must be {spec.type}: {message}", file=file, field=f"inputs.{name}"
            ) from None
    return values


class _Run:
    """The state of one run while it executes."""

    def __init__(self, engine: Engine, plan: Plan, run: RunRecord, clients: dict[str, ModelClient]) -> None:
        self.engine = engine
        self.plan = plan
        self.run = run
        self.clients = clients
        self.results: dict[str, dict[str, Any] | _Skipped] = {}
        self.summaries: list[StepSummary] = []
        self.failure: str | None = None
        self.semaphore = asyncio.Semaphore(engine.max_concurrency)
        self.tasks: set[asyncio.Task[None]] = set()

    def value(self, ref: Ref) -> Any:
        if ref.node == FLOW_INPUTS:
            return self.run.inputs[ref.port]
        result = self.results[ref.node]
        return None if isinstance(result, _Skipped) else result.get(ref.port)

    async def execute(self) -> None:
        waiting = {n: set(p.deps) for n, p in self.plan.nodes.items()}
        dependents: dict[str, list[str]] = {n: [] for n in self.plan.nodes}
        for node_id, node in self.plan.nodes.items():
            for dep in node.deps:
                dependents[dep].append(node_id)
        finished: asyncio.Queue[str] = asyncio.Queue()
        running = 0
        ready = [n for n, deps in waiting.items() if not deps]
        while ready or running:
            if self.failure is None:
                for node_id in ready:
                    task = asyncio.create_task(self._step(node_id, finished))
                    self.tasks.add(task)
                    task.add_done_callback(self.tasks.discard)
                    running += 1
            ready = []
            node_id = await finished.get()
            running -= 1
            if node_id not in self.results:
                continue
            for child in dependents[node_id]:
                waiting[child].discard(node_id)
                if not waiting[child]:
                    ready.append(child)

    async def _step(self, node_id: str, finished: asyncio.Queue[str]) -> None:
        try:
            async with self.semaphore:
                await self._run_node(self.plan.nodes[node_id])
        finally:
            finished.put_nowait(node_id)

    def _should_skip(self, node: PlanNode) -> bool:
        if node.data_deps and all(isinstance(self.results[d], _Skipped) for d in node.data_deps):
            return True
        if node.when is None:
            return False
        when_nodes = templates.expression_names(node.when) - {FLOW_INPUTS}
        if when_nodes and all(isinstance(self.results[n], _Skipped) for n in when_nodes):
            return True
        context: dict[str, Any] = {n: (None if isinstance(r, _Skipped) else r) for n, r in self.results.items()}
        context[FLOW_INPUTS] = self.run.inputs
        return not templates.evaluate(node.when, context)

    async def _run_node(self, node: PlanNode) -> None:
        started_at, start = now(), time.perf_counter()
        calls: list[CallRecord] = []
        step = StepRecord(node=node.id, status="succeeded", started_at=started_at)
        try:
            if self._should_skip(node):
                step.status = "skipped"
                self.results[node.id] = SKIPPED
            else:
                step.inputs = substitute(dict(node.inputs), self.value)
                step.outputs, step.attempt = await self._attempts(node, step.inputs, calls)
                self.results[node.id] = step.outputs
        except NodeError as err:
            step.status, step.error, step.error_kind = "failed", str(err), err.kind
        except Exception as err:  # a node's own bug: recorded, never crashes the engine
            step.status, step.error, step.error_kind = "failed", f"{type(err).__name__}: {err}", "exception"
        step.ended_at = now()
        step.tokens = sum(c.input_tokens + c.output_tokens for c in calls)
        step.cost_usd = sum(c.cost_usd for c in calls)
        self.engine.store.finish_step(self.run.run_id, step, calls)
        if step.status == "failed" and self.failure is None:
            self.failure = f"node {node.id!r} failed: {step.error}"
        seconds = time.perf_counter() - start
        self.summaries.append(
            StepSummary(node.id, step.status, step.attempt, step.tokens, step.cost_usd, round(seconds, 4), step.error)
        )
        self.engine.emit("step_finished", run_id=self.run.run_id, step=step, seconds=seconds)

    async def _attempts(
        self, node: PlanNode, values: dict[str, Any], calls: list[CallRecord]
    ) -> tuple[dict[str, Any], int]:
        attempts = node.retry.attempts if node.retry else 1
        for attempt in range(1, attempts + 1):
            try:
                return await self._attempt(node, values, calls, attempt), attempt
            except NodeError as err:
                if attempt == attempts or err.kind in ("auth", "template_error", "bad_input"):
                    raise
            assert node.retry is not None
            await asyncio.sleep(node.retry.backoff_s * 2 ** (attempt - 1) * random.uniform(0.5, 1.5))
        raise AssertionError("unreachable")

    async def _attempt(
        self, node: PlanNode, values: dict[str, Any], calls: list[CallRecord], attempt: int
    ) -> dict[str, Any]:
        try:
            inputs = node.node.Inputs.model_validate(values)
        except ValidationError as err:
            problem = err.errors(include_url=False)[0]
            where = ".".join(str(p) for p in problem["loc"])
            raise NodeError(f"input {where}: {problem['msg']}", kind="bad_input") from None
        ctx = NodeContext(
            run_id=self.run.run_id,
            node_id=node.id,
            flow_dir=self.plan.flow.base_dir,
            llm=self._llm(node, calls),
            attempt=attempt,
        )
        try:
            outputs: BaseModel = await asyncio.wait_for(node.node.run(inputs, ctx), node.timeout_s)
        except TimeoutError:
            raise NodeError(f"timed out after {node.timeout_s} s", kind="timeout") from None
        return outputs.model_dump(mode="json")

    def _llm(self, node: PlanNode, calls: list[CallRecord]) -> BoundLLM | NoModel:
        if node.model is None:
            return NoModel()
        return BoundLLM(node.id, node.model, self.plan.models[node.model], self.clients[node.model], calls)

    def outputs(self) -> dict[str, Any]:
        return {name: substitute(value, self.value) for name, value in self.plan.outputs.items()}


class Engine:
    """Runs plans and records them in a store."""

    def __init__(
        self, store: Store, *, max_concurrency: int = DEFAULT_MAX_CONCURRENCY, hooks: list[Hook] | None = None
    ) -> None:
        self.store = store
        self.max_concurrency = max_concurrency
        self.hooks = hooks or []

    def emit(self, event: str, **details: Any) -> None:
        """Call every hook with keyword arguments; hooks take **future_kwargs."""
        for hook in self.hooks:
            hook(event=event, **details)

    def clients(self, plan: Plan) -> dict[str, ModelClient]:
        """One client per alias used by the plan (raises on a bad model setting)."""
        used = {n.model for n in plan.nodes.values() if n.model}
        return {alias: client_for(plan.models[alias], plan.flow.base_dir) for alias in sorted(used)}

    async def run(self, plan: Plan, inputs: dict[str, Any], *, options: dict[str, Any] | None = None) -> RunResult:
        """Run a plan to the end; a failing node fails the run, never the caller."""
        values = prepare_inputs(plan, inputs)
        clients = self.clients(plan)
        flow = plan.flow
        record = RunRecord(
            run_id=new_id(),
            flow=flow.spec.name,
            flow_path=str(flow.path) if flow.path else None,
            flow_hash=flow.hash,
            inputs=values,
            options=options or {},
        )
        self.store.create_run(record, flow.text)
        self.emit("run_started", run_id=record.run_id, plan=plan)
        state = _Run(self, plan, record, clients)
        await state.execute()
        status: RunStatus = "failed" if state.failure else "succeeded"
        outputs = None if state.failure else state.outputs()
        final = self.store.finish_run(record.run_id, status=status, outputs=outputs, error=state.failure)
        self.emit("run_finished", run_id=record.run_id, status=status)
        return RunResult(
            run_id=final.run_id,
            status=final.status,
            outputs=final.outputs,
            error=final.error,
            tokens=final.tokens,
            cost_usd=final.cost_usd,
            steps=state.summaries,
        )

    def run_sync(self, plan: Plan, inputs: dict[str, Any], **kwargs: Any) -> RunResult:
        """A thin synchronous wrapper over `run`."""
        return asyncio.run(self.run(plan, inputs, **kwargs))
