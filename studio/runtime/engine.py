"""The engine: runs a Plan on asyncio, every ready node at once, bounded by max_concurrency.

Each finished node is one step, written with its model calls in one transaction: that row is
the checkpoint. When it is written (before its dependents start, in the background, or at the
run's end) is the run's durability mode (`studio.runtime.durability`). A resumed run reads its
finished steps back and runs only the rest; a rerun copies the steps upstream of a node into a
new run. Which steps those are, and whether the flow file still fits the run, is the runner's
(`studio.runtime.runner`): the engine takes a compiled plan and finished steps. It never imports
the studio app, and its errors name neutral fields (`values.NODE`) each caller words for its users.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ValidationError

from studio.errors import NOT_RETRIED, FlowError, InputError, NodeError
from studio.flow import paths, templates
from studio.flow.refs import FLOW_INPUTS, Ref, refs_in, substitute
from studio.flow.spec import Durability
from studio.flow.values import check_depth
from studio.mcp.sessions import McpSessions
from studio.models import client_for
from studio.models.base import ModelClient
from studio.node import NO_VALUE, NodeContext, WaitingForInput
from studio.runtime.budget import Budget
from studio.runtime.compiler import Plan, PlanNode, load_sub_flow
from studio.runtime.durability import StepWriter, choose, flush_quietly, step_writer
from studio.runtime.hooks import Hook, HookEvent
from studio.runtime.llm import BoundLLM, NoModel
from studio.runtime.memory import Memories
from studio.store.base import CallRecord, RunRecord, RunStatus, StepRecord, StepStatus, Store, new_id, now
from studio.store.recorder import Recorder
from studio.tools import resolve_tools
from studio.types import PortType, expected

DEFAULT_MAX_CONCURRENCY = 100
MAX_DEPTH = 8
"""How deep sub-flows nest (`flow.call`, `control.map`, `control.loop`) before a run refuses."""


class _Skipped:
    """Marker for a node that did not run; reads as null downstream."""

    def __repr__(self) -> str:
        return "SKIPPED"


SKIPPED = _Skipped()


@dataclass
class RunOptions:
    """How a run is executed; stored with the run so a resume keeps them."""

    cache: bool = True
    """Serve repeated model calls from the LLM cache."""
    max_cost: float | None = None
    """Stop before a call once this many USD are spent."""
    max_tokens: int | None = None
    """Stop before a call once this many tokens are used."""
    max_steps: int | None = None
    """Stop before a node once this many steps ran."""
    models: dict[str, str] = field(default_factory=dict)
    """Model alias overrides (ALIAS → model string)."""
    stream: bool = False
    """Stream model replies: each piece is emitted as a `token` event (run_id, node, text).
    Also on whenever a hook has `wants_tokens = True`; off, calls are made whole (faster)."""
    max_concurrency: int | None = None
    """Nodes running at once; None: the engine's (`DEFAULT_MAX_CONCURRENCY`)."""
    version: str | None = None
    """The version id the run records (a published version, or the working files' content hash);
    None: the flow file's own content hash."""
    durability: Durability | None = None
    """When finished steps reach the store: `sync`, `async` or `exit` (`studio.runtime.durability`);
    None: the flow's `durability:`, else `sync`. A run stores the mode it used."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunOptions:
        """Options from their JSON form; unknown keys (from a newer version) are ignored."""
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    @classmethod
    def of_run(cls, record: RunRecord) -> RunOptions:
        """The options a run was started with: what a resume or a rerun keeps (the one place they are read back)."""
        return cls.from_json(record.options)

    def as_json(self) -> dict[str, Any]:
        """The options as the run records them (`dataclasses.asdict` without its deep copy: every
        field is a plain value but `models`, copied here)."""
        return {**vars(self), "models": dict(self.models)}


@dataclass
class StepSummary:
    """One finished step of a run: its node, outcome and what it spent."""

    node: str
    status: StepStatus
    attempt: int
    tokens: int
    cost_usd: float
    seconds: float
    error: str | None = None
    calls: int = 0
    """Model calls the step made."""
    cache_hits: int = 0
    """Of those, the ones the LLM cache answered (they spend no tokens and cost nothing)."""


@dataclass
class RunResult:
    """The outcome of a run: its id and status, the outputs or the error, what it spent, its steps."""

    run_id: str
    status: RunStatus
    outputs: dict[str, Any] | None
    error: str | None
    tokens: int
    cost_usd: float
    steps: list[StepSummary] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The result as plain JSON (what every caller that shows a run as JSON prints)."""
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
    check_depth(given, "inputs")
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
            values[name] = plan.input_types[name].adapter().validate_python(given[name])
        except ValidationError as err:
            message = err.errors(include_url=False)[0]["msg"]
            raise InputError(
                f"input {name!r} must be {spec.type}: {message}", file=file, field=f"inputs.{name}"
            ) from None
    return values


@dataclass
class _Shared:
    """What every graph of one run (the top one and its sub-flows) shares."""

    engine: Engine
    run: RunRecord
    options: RunOptions
    budget: Budget
    finished: dict[str, StepRecord] = field(default_factory=dict)
    """Steps to take as done instead of running (resume) or to copy (rerun)."""
    copy_finished: bool = False
    supplied: dict[str, Any] = field(default_factory=dict)
    summaries: list[StepSummary] = field(default_factory=list)
    mcp: McpSessions = field(default_factory=McpSessions)
    """The run's MCP sessions, closed when the run ends."""
    clients: dict[tuple[str, str], ModelClient] = field(default_factory=dict)
    """One client per model setting for the whole run, so a scripted model's turns carry into sub-flows."""
    writer: StepWriter = field(init=False)
    """Where the run's steps go, as its durability mode says."""

    def __post_init__(self) -> None:
        self.writer = step_writer(self.engine.recorder, self.options.durability or "sync")


class _Graph:
    """One execution of a plan: the run's own flow, or a sub-flow inside a node."""

    def __init__(
        self,
        shared: _Shared,
        plan: Plan,
        inputs: dict[str, Any],
        prefix: str = "",
        depth: int = 0,
        tools: dict[str, Callable[..., Any]] | None = None,
    ) -> None:
        self.shared = shared
        self.plan = plan
        self.tools = tools or {}
        self.inputs = inputs
        self.prefix = prefix
        self.depth = depth
        self.results: dict[str, dict[str, Any] | _Skipped] = {}
        self.arrival: dict[str, int] = {}
        """Order in which nodes finished, for `gather_order() == "arrival"`."""
        self.gaps = False
        """Whether a wire may read nothing yet: a node was skipped, or one with routes finished
        (until then no node can miss an input, and the readiness rule is not walked)."""
        self.failure: str | None = None
        self.crash: Exception | None = None
        """An error no node caught (the store refused a step): the run stops and the caller gets it."""
        self.waiting: list[str] = []
        self.semaphore = asyncio.Semaphore(shared.options.max_concurrency or shared.engine.max_concurrency)
        self.tasks: set[asyncio.Task[None]] = set()
        self.clients: dict[str, ModelClient] = {}
        """This plan's clients by alias (looked up once: a key costs a serialisation)."""
        self.flow_dir = plan.flow.base_dir
        """The flow's folder, once (a flow read from text is in the working directory: a system call)."""

    def adopt(self, clients: dict[str, ModelClient]) -> None:
        """Use clients already built for this plan's aliases (by `Engine.check_models`)."""
        for alias, client in clients.items():
            key = (self.plan.models[alias].model_dump_json(), str(self.flow_dir))
            self.clients[alias] = self.shared.clients.setdefault(key, client)

    def client(self, alias: str) -> ModelClient:
        """The alias' client: one per model setting and folder in a run (sub-flows share them)."""
        if alias not in self.clients:
            spec = self.plan.models[alias]
            key = (spec.model_dump_json(), str(self.flow_dir))
            if key not in self.shared.clients:
                self.shared.clients[key] = client_for(spec, self.flow_dir)
            self.clients[alias] = self.shared.clients[key]
        return self.clients[alias]

    def value(self, ref: Ref) -> Any:
        if ref.node == FLOW_INPUTS:
            return self.inputs[ref.port]
        result = self.results[ref.node]
        return None if isinstance(result, _Skipped) else result.get(ref.port)

    def _gone(self, ref: Ref) -> bool:
        """Whether a wire reads nothing: its node was skipped, or it is a branch not taken."""
        if ref.node == FLOW_INPUTS:
            return False
        result = self.results[ref.node]
        return isinstance(result, _Skipped) or (self.plan.nodes[ref.node].node.routes and ref.port not in result)

    def _missing_required(self, node: PlanNode) -> bool:
        """The readiness rule: a required input that reads a skipped node (or branch) skips the node;
        an optional one (`T | null`) reads null; a `gathers` list needs one available option, unless
        its node runs on none (`gathers_none`)."""
        if not self.gaps and not node.node.gathers:
            return False
        ports: dict[str, PortType] | None = None
        for name, value in node.inputs.items():
            if name == node.node.gathers and isinstance(value, list):
                if not node.node.gathers_none and all(isinstance(v, Ref) and self._gone(v) for v in value):
                    return True
                continue
            if not any(self._gone(r) for r in refs_in(value)):
                continue
            ports = ports if ports is not None else node.node.ready_ports(self.tools)
            if not _takes_null(ports.get(name), value):
                return True
        return False

    def _input_values(self, node: PlanNode) -> dict[str, Any]:
        """The node's input values; a `gathers` list keeps only its available options."""
        values: dict[str, Any] = substitute(dict(node.inputs), self.value)
        name = node.node.gathers
        wired = node.inputs.get(name) if name else None
        if name and isinstance(wired, list):
            kept = [(i, v) for i, v in enumerate(wired) if not (isinstance(v, Ref) and self._gone(v))]
            if node.node.gather_order() == "arrival":
                kept.sort(key=lambda pair: self.arrival.get(pair[1].node, -1) if isinstance(pair[1], Ref) else -1)
            values[name] = [values[name][i] for i, _ in kept]
        return values

    def _done(self, node_id: str, result: dict[str, Any] | _Skipped) -> None:
        self.results[node_id] = result
        if isinstance(result, _Skipped) or self.plan.nodes[node_id].node.routes:
            self.gaps = True
        self.arrival[node_id] = len(self.arrival)

    def outputs(self) -> dict[str, Any]:
        return {name: substitute(value, self.value) for name, value in self.plan.outputs.items()}

    async def execute(self) -> None:
        """Run the graph; cancelled, it cancels its running nodes (they record no step) first."""
        try:
            await self._execute_nodes()
        except asyncio.CancelledError:
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
            raise

    async def _execute_nodes(self) -> None:
        waiting = {n: set(p.deps) for n, p in self.plan.nodes.items()}
        dependents: dict[str, list[str]] = {n: [] for n in self.plan.nodes}
        for node_id, node in self.plan.nodes.items():
            for dep in node.deps:
                dependents[dep].append(node_id)
        finished: asyncio.Queue[str] = asyncio.Queue()
        running = 0
        ready = [n for n, deps in waiting.items() if not deps]
        while ready or running:
            if self.failure is None and self.crash is None:
                if len(ready) == 1 and not running:  # a chain: nothing else can start meanwhile,
                    await self._step(ready[0], finished)  # so the node runs here, without a task
                else:
                    for node_id in ready:
                        task = asyncio.create_task(self._step(node_id, finished))
                        self.tasks.add(task)
                        task.add_done_callback(self.tasks.discard)
                running += len(ready)
            ready = []
            if not running:
                break
            node_id = await finished.get()
            running -= 1
            if node_id not in self.results:
                continue
            for child in dependents[node_id]:
                waiting[child].discard(node_id)
                if not waiting[child]:
                    ready.append(child)
        if self.crash is not None:
            raise self.crash

    async def _step(self, node_id: str, finished: asyncio.Queue[str]) -> None:
        try:
            async with self.semaphore:
                await self._run_node(self.plan.nodes[node_id])
        except Exception as err:  # not a node's failure (those are steps): the first one stops the run
            self.crash = self.crash or err
        finally:
            finished.put_nowait(node_id)

    def _should_skip(self, node: PlanNode) -> bool:
        if self._missing_required(node):
            return True
        if node.when is None:
            return False
        if node.when_deps and all(isinstance(self.results[n], _Skipped) for n in node.when_deps):
            return True
        context: dict[str, Any] = {n: (None if isinstance(r, _Skipped) else r) for n, r in self.results.items()}
        context[FLOW_INPUTS] = self.inputs
        return not templates.evaluate(node.when, context)

    async def _take_finished(self, node: PlanNode, path: str) -> bool:
        """Use a step finished earlier (resume) or copy it (rerun); False when there is none."""
        done = self.shared.finished.get(path)
        if done is None:
            return False
        self._done(node.id, SKIPPED if done.status == "skipped" else (done.outputs or {}))
        if self.shared.copy_finished:
            reused = StepRecord(node=path, status=done.status, inputs=done.inputs, outputs=done.outputs, reused=True)
            await self.shared.writer.step(self.shared.run.run_id, reused, [])
        return True

    async def _run_node(self, node: PlanNode) -> None:
        path = self.prefix + node.id
        if await self._take_finished(node, path):
            return
        start = time.perf_counter()
        calls: list[CallRecord] = []
        started = now()
        step = StepRecord(node=path, status="succeeded", started_at=started, ended_at=started)  # ended in _finish
        try:
            if self._should_skip(node):
                step.status = "skipped"
                self._done(node.id, SKIPPED)
            else:
                self.shared.budget.before_step()
                self.shared.budget.steps += 1
                self.shared.engine.emit("step_started", run_id=self.shared.run.run_id, node=path)
                step.inputs = self._input_values(node)
                step.outputs, step.attempt = await self._attempts(node, path, step.inputs, calls)
                self._done(node.id, step.outputs)
        except WaitingForInput as wait:
            step.status, step.error, step.error_kind = "waiting", wait.prompt, "waiting"
            self.waiting.append(path)
        except NodeError as err:
            step.status, step.error, step.error_kind = "failed", str(err), err.kind
        except Exception as err:  # a node's own bug: recorded, never crashes the engine
            step.status, step.error, step.error_kind = "failed", f"{type(err).__name__}: {err}", "exception"
        await self._finish(step, calls, time.perf_counter() - start)

    async def _finish(self, step: StepRecord, calls: list[CallRecord], seconds: float) -> None:
        step.ended_at = now()
        if calls:  # else the record's zeros stand
            step.tokens = sum(c.input_tokens + c.output_tokens for c in calls)
            step.cost_usd = sum(c.cost_usd for c in calls)
            step.cached = all(c.cache_hit for c in calls)
        last = not self.depth and len(self.results) == len(self.plan.nodes)  # the run's last node
        await self.shared.writer.step(self.shared.run.run_id, step, calls, last)
        if step.status == "failed" and self.failure is None:
            self.failure = f"node {step.node!r} failed: {step.error}"
        summary = StepSummary(
            step.node, step.status, step.attempt, step.tokens, step.cost_usd, round(seconds, 4), step.error,
            calls=len(calls), cache_hits=sum(c.cache_hit for c in calls),
        )  # fmt: skip
        self.shared.summaries.append(summary)
        self.shared.engine.emit("step_finished", run_id=self.shared.run.run_id, step=step, seconds=seconds, calls=calls)

    async def _attempts(
        self, node: PlanNode, path: str, values: dict[str, Any], calls: list[CallRecord]
    ) -> tuple[dict[str, Any], int]:
        attempts = node.retry.attempts if node.retry else 1
        for attempt in range(1, attempts + 1):
            try:
                return await self._attempt(node, path, values, calls, attempt), attempt
            except NodeError as err:
                if attempt == attempts or err.kind in NOT_RETRIED:
                    raise
            assert node.retry is not None
            await asyncio.sleep(node.retry.backoff_s * 2 ** (attempt - 1) * random.uniform(0.5, 1.5))
        raise AssertionError("unreachable")

    async def _attempt(
        self, node: PlanNode, path: str, values: dict[str, Any], calls: list[CallRecord], attempt: int
    ) -> dict[str, Any]:
        try:
            inputs = node.node.parse_inputs(values)
        except ValidationError as err:
            problem = err.errors(include_url=False)[0]
            where = ".".join(str(p) for p in problem["loc"])
            port = node.node.input_ports().get(str(problem["loc"][0])) if problem["loc"] else None
            takes = f" ({problem['loc'][0]} takes {expected(port)})" if port and port.name == "messages" else ""
            raise NodeError(f"input {where}: {problem['msg']}{takes}", kind="bad_input") from None
        ctx = NodeContext(
            run_id=self.shared.run.run_id,
            node_id=path,
            flow_dir=self.flow_dir,
            llm=self._llm(node, path, calls),
            attempt=attempt,
            call_flow=functools.partial(self.call_flow, path),
            supplied=self.shared.supplied.get(path, NO_VALUE),
            tools=self.tools,
            mcp=self.shared.mcp,
            llm_for=functools.partial(self._llm_for, node, path, calls),
            memory=self.shared.engine.memories.of(
                self.plan.flow.spec.name, path, run_id=self.shared.run.run_id, version=self.shared.run.version
            ),
        )
        try:
            if node.timeout_s is None:  # no scope of its own: an enclosing node's deadline still holds
                outputs: BaseModel = await node.node.run(inputs, ctx)
            else:
                with templates.time_limit(node.timeout_s):
                    async with asyncio.timeout(node.timeout_s):  # in this task: wait_for would start another
                        outputs = await node.node.run(inputs, ctx)
        except TimeoutError:
            raise NodeError(f"timed out after {node.timeout_s} s", kind="timeout") from None
        return outputs.model_dump(mode="json")

    def _llm(self, node: PlanNode, path: str, calls: list[CallRecord]) -> BoundLLM | NoModel:
        if node.model is None:
            return NoModel()
        cache = self.shared.engine.recorder if (self.shared.options.cache and node.cache) else None
        on_token = self.shared.engine.token_sink(self.shared.run.run_id, path, self.shared.options)
        return BoundLLM(path, node.model, self.plan.models, self.client, calls, self.shared.budget, cache, on_token)

    def _llm_for(self, node: PlanNode, path: str, calls: list[CallRecord], alias: str, why: str = "") -> BoundLLM:
        if alias not in dict(node.node.model_aliases()).values():
            raise NodeError(f"model alias {alias!r} is not one the node names", kind="no_model")
        cache = self.shared.engine.recorder if (self.shared.options.cache and node.cache) else None
        tag = {"cascade": "teacher", **({"why": why} if why else {})}
        return BoundLLM(path, alias, self.plan.models, self.client, calls, self.shared.budget, cache, tag=tag)

    async def call_flow(
        self, path: str, flow: str | dict[str, Any], inputs: dict[str, Any], label: str = ""
    ) -> dict[str, Any]:
        """The `ctx.call_flow` of the node at `path`: a sub-flow run inside this run, its steps
        named under the calling node (`map[2].summarise`)."""
        if self.depth >= MAX_DEPTH:
            raise NodeError(
                f"sub-flows nested deeper than {MAX_DEPTH} levels (a flow calling itself?)", kind="bad_flow"
            )
        try:
            caller = f"{self.plan.flow.file}:{path}"
            plan = load_sub_flow(flow, self.plan.flow.base_dir, caller, self.shared.options.models)
            values = prepare_inputs(plan, inputs)
        except FlowError as err:
            raise NodeError(f"sub-flow: {err}", kind="bad_input") from None
        prefix = f"{path}[{label}]." if label else f"{path}."
        return await self.run_child(plan, values, prefix)

    async def run_child(self, plan: Plan, inputs: dict[str, Any], prefix: str) -> dict[str, Any]:
        """Run a sub-flow as part of this run; its steps are named under `prefix`."""
        try:
            tools = resolve_tools(plan.flow)
        except FlowError as err:
            raise NodeError(f"sub-flow: {err}", kind="bad_input") from None
        child = _Graph(self.shared, plan, inputs, prefix, self.depth + 1, tools)
        await child.execute()
        if child.failure:
            raise NodeError(f"sub-flow failed: {child.failure}", kind="sub_flow")
        if child.waiting:
            raise WaitingForInput(f"sub-flow is waiting for input at {', '.join(child.waiting)}")
        return child.outputs()


class Engine:
    """Runs plans and records them in a store."""

    def __init__(
        self, store: Store, *, max_concurrency: int = DEFAULT_MAX_CONCURRENCY, hooks: list[Hook] | None = None
    ) -> None:
        self.store = store
        self.recorder = Recorder(store)
        """How runs are written into the store: awaited, group-committed where the store can."""
        self.max_concurrency = max_concurrency
        self.hooks = hooks or []
        self.memories = Memories(store)
        """Every node's teacher memory (`strategy: cascade`), kept in the store's teacher book."""

    def emit(self, event: HookEvent, *, run_id: str, **details: Any) -> None:
        """Call every hook with keyword arguments; hooks take **future_kwargs."""
        for hook in self.hooks:
            hook(event=event, run_id=run_id, **details)

    def token_sink(self, run_id: str, node: str, options: RunOptions) -> Callable[[str], None] | None:
        """Where a node's streamed reply goes: `token` events, when the run or a hook wants them."""
        if not (options.stream or any(getattr(hook, "wants_tokens", False) for hook in self.hooks)):
            return None

        def emit(text: str) -> None:
            self.emit("token", run_id=run_id, node=node, text=text)

        return emit

    def check_models(self, plan: Plan) -> dict[str, Callable[..., Any]]:
        """Build each alias' client and import the flow's tools once, so a bad model setting or
        tool is bad input, found before the run exists. Returns the tools."""
        return self._prepare(plan)[0]

    def _prepare(self, plan: Plan) -> tuple[dict[str, Callable[..., Any]], dict[str, ModelClient]]:
        """`check_models`, keeping the clients it built (the run uses them)."""
        aliases = sorted({n.model for n in plan.nodes.values() if n.model})
        clients = {alias: client_for(plan.models[alias], plan.flow.base_dir) for alias in aliases}
        return resolve_tools(plan.flow), clients

    async def run(
        self,
        plan: Plan,
        inputs: dict[str, Any],
        *,
        options: RunOptions | None = None,
        experiment_id: str | None = None,
        parent_run_id: str | None = None,
        finished: dict[str, StepRecord] | None = None,
    ) -> RunResult:
        """Run a plan to the end; a failing node fails the run, never the caller."""
        options = options or RunOptions()
        options = replace(options, durability=choose(options.durability, plan.flow.spec.durability))
        values = prepare_inputs(plan, inputs)
        prepared = self._prepare(plan)
        flow = plan.flow
        record = RunRecord(
            run_id=new_id(),
            flow=flow.spec.name,
            flow_path=str(flow.path) if flow.path else None,
            flow_hash=flow.hash,
            inputs=values,
            options=options.as_json(),
            experiment_id=experiment_id,
            parent_run_id=parent_run_id,
            version=options.version or flow.hash,
        )
        self.recorder.create_run(record, flow.text)  # queued: committed with the run's first awaited write
        budget = Budget(options.max_cost, options.max_tokens, options.max_steps)
        shared = _Shared(self, record, options, budget, finished or {}, copy_finished=finished is not None)
        return await self._execute(shared, plan, prepared)

    async def continue_run(
        self,
        record: RunRecord,
        plan: Plan,
        finished: dict[str, StepRecord],
        *,
        options: RunOptions,
        supplied: dict[str, Any] | None = None,
        steps_done: int = 0,
    ) -> RunResult:
        """Continue a stopped run of `plan`: the `finished` steps are taken as done, `supplied` values
        answer its waiting nodes (InputError at `values.NODE` for one the node refuses), and the
        budget counts what the run spent already (`steps_done` steps)."""
        options = replace(options, durability=choose(options.durability, plan.flow.spec.durability))
        for path, value in (supplied or {}).items():
            problem = plan.nodes[path].node.refuse_value(value) if path in plan.nodes else None
            if problem:
                raise InputError(problem, field=f"values.{path}")
        prepared = self._prepare(plan)
        self.store.set_status(record.run_id, "running")
        budget = Budget(options.max_cost, options.max_tokens, options.max_steps, record.cost_usd, record.tokens)
        budget.steps = steps_done
        shared = _Shared(self, record, options, budget, finished, supplied=supplied or {})
        return await self._execute(shared, plan, prepared)

    async def _execute(
        self, shared: _Shared, plan: Plan, prepared: tuple[dict[str, Callable[..., Any]], dict[str, ModelClient]]
    ) -> RunResult:
        run_id = shared.run.run_id
        self.emit("run_started", run_id=run_id, plan=plan, run=shared.run)
        tools, clients = prepared
        graph = _Graph(shared, plan, shared.run.inputs, tools=tools)
        graph.adopt(clients)
        try:
            with paths.rooted(plan.flow.base_dir):
                await graph.execute()
        except asyncio.CancelledError:
            await flush_quietly(shared.writer)
            self.store.finish_run(run_id, status="cancelled", outputs=None, error="cancelled")
            self.emit("run_finished", run_id=run_id, status="cancelled")
            raise
        except Exception as err:  # a write the store refused, or a bug: the run must not stay `running`
            await flush_quietly(shared.writer)
            self._stopped_by(run_id, err)
            raise
        except BaseException:
            await flush_quietly(shared.writer)
            raise
        finally:
            await shared.mcp.close()
        status: RunStatus = "succeeded"
        error, outputs = None, None
        if graph.failure:
            status, error = "failed", graph.failure
        elif graph.waiting:
            status, error = "waiting", f"waiting for input at {', '.join(graph.waiting)}"
        else:
            outputs = graph.outputs()
        try:
            final = await shared.writer.end(run_id, status=status, outputs=outputs, error=error)
        except Exception as err:  # a step written in the background failed (`async`), or the end did
            self._stopped_by(run_id, err)
            raise
        self.emit("run_finished", run_id=run_id, status=status, run=final)
        # The caller gets the outputs as computed; the store (and so every trace and report) has them masked.
        kept = final.outputs if outputs is None else outputs
        return RunResult(final.run_id, final.status, kept, final.error, final.tokens, final.cost_usd, shared.summaries)

    def _stopped_by(self, run_id: str, err: Exception) -> None:
        """End a run an error stopped as `failed`, saying why, as far as the store still takes writes
        (the caller gets the error itself)."""
        with contextlib.suppress(Exception):
            self.store.finish_run(
                run_id, status="failed", outputs=None, error=f"stopped by {type(err).__name__}: {err}"
            )
        self.emit("run_finished", run_id=run_id, status="failed")

    def run_sync(self, plan: Plan, inputs: dict[str, Any], **kwargs: Any) -> RunResult:
        """A thin synchronous wrapper over `run`."""
        return asyncio.run(self.run(plan, inputs, **kwargs))


def _takes_null(port: PortType | None, value: Any) -> bool:
    """Whether an input may read null where a wire reads a skipped node: an optional port, or an
    item of a wired list whose item type is optional."""
    if port is None:
        return False
    return port.optional or (isinstance(value, list) and port.item is not None and port.item.optional)
