"""Run tasks of a server: start, follow, resume and cancel runs; finish background runs that a
killed server left behind.

Each run is an asyncio task driving the engine on the server's store (the CLI's store: its
runs appear in `flowstudio runs`, the studio and traces). At most `max_concurrency` runs
execute at once; more wait for a slot. A `background` run is also written to the store's
ledger (`studio.serve.ledger`): on SQLite a server started again resumes it from its checkpoints
when the server that owned it is gone; on PostgreSQL it is a leased row of a work queue that
another replica claims and resumes when the owner stops renewing it. The id of every event the
store's step rows cannot rebuild (`step_started`, a resume's `run_started`) goes to
`serve_events` as it is sent, so a replay gives it the same id, on any replica. A `wait` run that
no one follows sends its `step_started` events to no one: it records their ids only if a follower
arrives while the step runs (a replay numbers the others from their rows). On PostgreSQL a
background run's writes are fenced by this server's lease: one refused (`LeaseLost`, the run was
taken over while this server was paused or cut off) stops the run here.

Where other processes serve the same store (the workers of `flowstudio serve --workers N`, replicas
on PostgreSQL), a client's request may reach a process that does not drive the run it names. Such
a server (`siblings`) watches the store: every `CANCEL_POLL_S` it cancels the runs it drives that
another process was asked to cancel (the ledger's `serve_cancels`), and every `CLAIM_S` it renews
its leases and resumes the background runs whose process is gone.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from studio.errors import FlowError
from studio.runtime.engine import DEFAULT_MAX_CONCURRENCY, Engine, RunResult
from studio.runtime.runner import resume_on
from studio.serve.catalog import NotFound
from studio.serve.events import Channel, Event, Key, last_key, replay, step_data
from studio.serve.ledger import LeaseLost, ledger_for
from studio.store.base import RunRecord, Store

log = logging.getLogger("flowstudio.serve")
Mode = Literal["wait", "stream", "background"]
Start = Callable[[Engine], Awaitable[RunResult]]
KEEP_ALIVE_S = 15.0
POLL_S = 0.25
CLAIM_S = 1.0
"""How often a replica on a shared store renews its leases and looks for runs to take over."""
CANCEL_POLL_S = 0.25
"""How often a server with siblings looks for requests to cancel the runs it drives."""
CANCEL_WAIT_S = 10.0
"""How long a cancel asked of another process waits for the run to stop before answering 409."""


class NotNow(Exception):
    """The run exists but cannot do that now (cancel a finished run, resume a running one): 409."""


async def drain(queue: asyncio.Queue[Event | None]) -> AsyncIterator[Event | None]:
    """A listener's events until the run's channel closes it (a None in the queue); a None every
    `KEEP_ALIVE_S` while nothing comes (a keep-alive)."""
    while True:
        try:
            item = await asyncio.wait_for(queue.get(), KEEP_ALIVE_S)
        except TimeoutError:
            yield None
            continue
        if item is None:
            return
        yield item


@dataclass(eq=False)
class RunTask:
    """One engine run (or resume) in this process, with its live events."""

    manager: RunManager
    mode: Mode
    resuming: str | None
    """The status of the run this task resumes (None: a new run)."""
    channel: Channel = field(default_factory=Channel)
    started: asyncio.Future[str] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    task: asyncio.Task[RunResult] | None = None
    version: str | None = None
    """The version the run records (set as it starts)."""
    unsent: dict[str, Event] = field(default_factory=dict)
    """`step_started` events of steps in flight that no client has been sent, by node: a `wait` run
    nobody follows records no event id; a follower's arrival records these (`announce`)."""

    def hook(self, *, event: str, **details: Any) -> None:
        """Relay the engine's events to the channel (the engine calls every hook with keywords)."""
        if event == "run_started":
            run_id = details["run_id"]
            self.version = details["run"].version
            self._start(run_id, details["plan"].flow.spec.name)
            self.manager.active[run_id] = self
            if self.mode == "background":
                self.manager.mark_background(run_id)
            if not self.started.done():
                self.started.set_result(run_id)
        elif event == "step_started":
            started = self.channel.after(event, {"run_id": details["run_id"], "node": details["node"]})
            if self.channel.listeners or self.mode != "wait" or self.manager.siblings:
                self.manager.record(started)
            else:
                self.unsent[details["node"]] = started
        elif event == "token":
            self.channel.token({"run_id": details["run_id"], "node": details["node"], "text": details["text"]})
        elif event == "step_finished":
            self.unsent.pop(details["step"].node, None)  # replayed from its row, as no one saw its id
            self.channel.row(functools.partial(step_data, details["run_id"], details["step"]))
        elif event == "run_finished" and details.get("status") != "cancelled" and self.channel.listeners:
            self.finish()

    def _start(self, run_id: str, flow: str) -> None:
        store = self.manager.store
        if not self.resuming:
            self.channel.start(run_id, flow, 0)
            return
        steps = store.steps(run_id)
        after = last_key(steps, self.manager.announced(run_id), self.resuming)
        self.manager.record(self.channel.start(run_id, flow, len(steps), after))

    def announce(self) -> list[Event]:
        """Record the `step_started` events of steps in flight that no one was sent (a follower
        arrived): returns them, for the follower's replay."""
        unsent, self.unsent = list(self.unsent.values()), {}
        for event in unsent:
            self.manager.record(event)
        return unsent

    def finish(self) -> None:
        """Send `waiting` and `run_finished` as the store has the stopped run."""
        run_id = self.channel.run_id
        record = self.manager.store.get_run(run_id) if run_id is not None else None
        if record is not None and record.status != "running":
            self.channel.finish(record, self.manager.store.steps(record.run_id))

    async def wait_started(self) -> str:
        """The run id once the engine created the run; raises what the engine refused (FlowError)."""
        assert self.task is not None
        waiters: set[asyncio.Future[Any]] = {self.started, self.task}
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        if self.started.done():
            await self.manager.ledger.flush()  # the run's row, queued as it started, is committed
            return self.started.result()
        self.task.result()
        raise RuntimeError("the run ended before it started")

    async def events(self, queue: asyncio.Queue[Event | None]) -> AsyncIterator[Event | None]:
        """The events of a queue from `channel.listen()` until the run task ends (None: keep-alive)."""
        try:
            async for item in drain(queue):
                yield item
        finally:
            self.channel.forget(queue)

    async def result(self) -> RunResult:
        """The finished run; the run goes on if the caller is cancelled (a dropped connection)."""
        assert self.task is not None
        return await asyncio.shield(self.task)


class RunManager:
    """The runs this server drives, and the store they are recorded in."""

    def __init__(self, store: Store, max_concurrency: int, *, siblings: bool = False) -> None:
        self.store = store
        self.ledger = ledger_for(store, on_lost=self._lost)
        self.siblings = siblings or self.ledger.shared
        """Whether other server processes serve this store (then this one watches it: `watch`)."""
        self.loop: asyncio.AbstractEventLoop | None = None
        """The loop the run tasks run on (set by `start`)."""
        self.slots = asyncio.Semaphore(max_concurrency)
        self.active: dict[str, RunTask] = {}
        self.tasks: set[RunTask] = set()
        self.watcher: asyncio.Task[None] | None = None
        """With siblings: the task taking cancel requests, renewing leases and claiming runs (`watch`)."""

    def start(self, begin: Start, mode: Mode, *, resuming: str | None = None) -> RunTask:
        """Start a run task now; listen to its channel before the first await to miss nothing."""
        self.loop = asyncio.get_running_loop()
        run = RunTask(self, mode, resuming)
        run.task = asyncio.create_task(self._drive(run, begin))
        run.task.add_done_callback(_log_failure)
        self.tasks.add(run)
        return run

    async def _drive(self, run: RunTask, begin: Start) -> RunResult:
        try:
            async with self.slots:
                engine = Engine(self.store, max_concurrency=DEFAULT_MAX_CONCURRENCY, hooks=[run.hook])
                return await begin(engine)
        finally:
            try:
                await self._settle(run)
            finally:
                run.channel.close()
            run_id = run.channel.run_id
            if run_id is not None and self.active.get(run_id) is run:
                del self.active[run_id]
            if run_id is not None and run_id not in self.active:
                self.ledger.forget(run_id)
            self.tasks.discard(run)

    async def _settle(self, run: RunTask) -> None:
        """A cancelled run: its recorded ids committed first (the engine recorded the cancel
        outside the group writer), then its closing events, numbered as a replay numbers them."""
        if not run.channel.listeners or run.channel.run_id is None:
            return  # nobody to tell (a `wait` run, a stream whose client left)
        record = self.store.get_run(run.channel.run_id)
        if record is None or record.status != "cancelled":
            return
        await asyncio.shield(self.ledger.flush())
        run.finish()

    def record(self, event: Event) -> None:
        """Keep the id of an event the step rows cannot rebuild (committed before any later write)."""
        major, minor, _ = event.key
        self.ledger.record((event.data["run_id"], major, minor, event.name, json.dumps(event.data, ensure_ascii=False)))

    def announced(self, run_id: str) -> list[Event]:
        """The recorded `step_started` and resume `run_started` events of a run, in id order."""
        return [Event((major, minor, 0), name, data) for major, minor, name, data in self.ledger.announced(run_id)]

    def replay(self, run_id: str) -> list[Event]:
        """Every event of the run the store can give, with the ids they had live."""
        return replay(self.get(run_id), self.store.steps(run_id), self.announced(run_id))

    def mark_background(self, run_id: str) -> None:
        """Record that this server drives a background run (on a shared store: it holds its lease)."""
        self.ledger.mark_background(run_id)

    def get(self, run_id: str) -> RunRecord:
        """The stored run; raises NotFound (404)."""
        record = self.store.get_run(run_id)
        if record is None:
            raise NotFound(f"no run {run_id!r}")
        return record

    async def cancel(self, run_id: str) -> RunRecord:
        """Cancel a run this server drives, or close a waiting or failed one, as `cancelled`."""
        running = self.active.get(run_id)
        if running is not None and running.task is not None:  # its row may still be queued: not read first
            running.task.cancel()
            await asyncio.wait({running.task})
            return self.get(run_id)
        record = self.get(run_id)
        if record.status in ("waiting", "failed", "interrupted"):
            self.store.finish_run(run_id, status="cancelled", outputs=None, error="cancelled")
        elif record.status == "running" and self.siblings:
            return await self._cancel_elsewhere(run_id)
        elif record.status == "running":
            raise NotNow(f"run {run_id} is not running in this server; cancel it where it runs")
        elif record.status == "succeeded":
            raise NotNow(f"run {run_id} already succeeded")
        return self.get(run_id)

    async def _cancel_elsewhere(self, run_id: str) -> RunRecord:
        """Ask the process driving the run to cancel it, and wait until the store shows it stopped."""
        self.ledger.ask_cancel(run_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CANCEL_WAIT_S
        while loop.time() < deadline:
            record = self.get(run_id)
            if record.status != "running":
                return record
            await asyncio.sleep(0.05)
        self.ledger.drop_cancel(run_id)
        raise NotNow(f"run {run_id} runs in another server process, which did not stop it within {CANCEL_WAIT_S:g} s")

    def check_resumable(self, run_id: str) -> RunRecord:
        record = self.get(run_id)
        if run_id in self.active or record.status == "running":
            raise NotNow(f"run {run_id} is running; resume it once it stops")
        if record.status == "succeeded":
            raise NotNow(f"run {run_id} already succeeded; there is nothing to resume")
        return record

    async def follow(self, run_id: str, after: Key | None) -> AsyncIterator[Event | None]:
        """The run's events after `after`: replayed from the store, then live until the run stops.

        Yields None now and then while nothing happens (a keep-alive)."""
        live = self.active.get(run_id)
        queue = live.channel.listen() if live is not None else None
        last = after
        try:
            record = self.get(run_id)
            replayed = self.replay(run_id)
            if live is not None and live.unsent:
                replayed = sorted([*replayed, *live.announce()], key=lambda event: event.key)
            for event in replayed:
                if last is None or event.key > last:
                    last = event.key
                    yield event
            if queue is not None:
                async for item in drain(queue):
                    if item is None:
                        yield None
                    elif last is None or item.key > last:
                        last = item.key
                        yield item
            elif record.status == "running":
                async for polled in self._poll(run_id, last):
                    yield polled
        finally:
            if live is not None and queue is not None:
                live.channel.forget(queue)

    async def _poll(self, run_id: str, last: Key | None) -> AsyncIterator[Event | None]:
        """Follow a run that another process drives by reading the store."""
        quiet = 0.0
        while True:
            await asyncio.sleep(POLL_S)
            record = self.get(run_id)
            sent = False
            for event in self.replay(run_id):
                if last is None or event.key > last:
                    last, sent = event.key, True
                    yield event
            quiet = 0.0 if sent else quiet + POLL_S
            if record.status != "running":
                return
            if quiet >= KEEP_ALIVE_S:
                quiet = 0.0
                yield None

    def recover(self) -> list[str]:
        """Resume the background runs a server that is gone left `running`; returns their ids.
        On a shared store, also start `watch`, which goes on doing so."""
        if self.siblings and self.watcher is None:
            self.watcher = asyncio.create_task(self.watch())
        resumed = []
        for run_id in self.ledger.orphans():
            if run_id in self.active:
                continue
            run = self.start(_resumer(run_id), "background", resuming="running")
            assert run.task is not None
            run.task.add_done_callback(functools.partial(self._recovered, run_id))
            resumed.append(run_id)
        return resumed

    async def watch(self) -> None:
        """Every CANCEL_POLL_S: cancel the runs another process was asked to cancel. Every CLAIM_S:
        renew this server's leases (stop driving a run another server took), then claim and resume
        the runs whose lease ran out or whose process is gone."""
        polls = round(CLAIM_S / CANCEL_POLL_S)
        while True:
            for _ in range(polls):
                await asyncio.sleep(CANCEL_POLL_S)
                await self._take_cancels()
            try:
                for run_id in await asyncio.to_thread(self.ledger.renew, self._background()):
                    self._taken(run_id)
                resumed = self.recover()
            except Exception:
                log.exception("renewing leases failed; trying again")
                continue
            if resumed:
                log.warning("taking over %d background run(s): %s", len(resumed), ", ".join(resumed))

    async def _take_cancels(self) -> None:
        """Cancel the runs this server drives that a request reaching another process asked to stop."""
        if not self.active:
            return
        driven = list(self.active)
        try:  # PostgreSQL's round trip off the loop; SQLite's connection stays on the loop's thread
            asked = (
                await asyncio.to_thread(self.ledger.cancels, driven)
                if self.ledger.shared
                else self.ledger.cancels(driven)
            )
        except Exception:
            log.exception("reading cancel requests failed; trying again")
            return
        for run_id in asked:
            running = self.active.get(run_id)
            if running is not None and running.task is not None:
                running.task.cancel()

    def _lost(self, run_id: str) -> None:
        """A fenced write found the run taken (told from the writer's thread or this loop)."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._taken, run_id)

    def _taken(self, run_id: str) -> None:
        """Stop driving a run another server took; its fence keeps refusing what the run writes
        as it stops (the cancellation it would record)."""
        running = self.active.pop(run_id, None)
        if running is not None and running.task is not None:
            log.warning("run %s was taken over by another server; stopping here", run_id)
            running.task.cancel()

    def _background(self) -> list[str]:
        return [run_id for run_id, run in self.active.items() if run.mode == "background"]

    def _recovered(self, run_id: str, task: asyncio.Task[RunResult]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if isinstance(error, LeaseLost):
            return
        if isinstance(error, FlowError):
            log.warning("run %s could not be resumed: %s", run_id, error)
            self.store.finish_run(run_id, status="failed", outputs=None, error=f"not resumed: {error}")
        elif error is not None:
            log.error("run %s failed to resume", run_id, exc_info=error)

    async def shutdown(self) -> None:
        """Stop every run task; background runs stay `running`, so the next start resumes them."""
        if self.watcher is not None:
            self.watcher.cancel()
        background = self._background()
        runs = list(self.tasks)
        for run in runs:
            assert run.task is not None
            run.task.cancel()
        if runs:
            await asyncio.wait({run.task for run in runs if run.task is not None})
        for run in runs:
            run_id = run.channel.run_id
            record = self.store.get_run(run_id) if run.mode == "background" and run_id else None
            if record is not None and record.status == "cancelled":
                self.store.set_status(record.run_id, "running")
        self.ledger.release(background)


def _resumer(run_id: str) -> Start:
    async def begin(engine: Engine) -> RunResult:
        return await resume_on(engine, run_id)

    return begin


def _log_failure(task: asyncio.Task[RunResult]) -> None:
    """Retrieve every task's error (a refused run is answered by its request); log the bugs."""
    if task.cancelled():
        return
    error = task.exception()
    if isinstance(error, LeaseLost):
        log.warning("%s", error)
    elif error is not None and not isinstance(error, FlowError):
        log.error("a run task crashed", exc_info=error)
