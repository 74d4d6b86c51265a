"""Durability modes: when a run's finished steps reach the store (LangGraph's `durability`).

- `sync` (the default): a step's dependents start once its row is committed. A crash loses
  only the steps in flight. The run's last step, which nothing but the end waits on, shares the
  end's commit.
- `async`: a step's write is queued in the background and its dependents start at once; the
  run's end is committed with or after every queued write, never before. A crash loses at most
  the steps whose writes were still queued, never a finished run's record.
- `exit`: steps are kept in memory and written together with the run's end (one group
  commit). A crash before the end leaves the run with no steps: a resume runs it from the start.

The run row itself is queued when the run starts in every mode and committed ahead of every later
write (the writer keeps their order): before a `sync` run's first dependent starts, in the
background while an `async` or `exit` run's nodes run (a few milliseconds after the start, the
writer's linger, if no awaited write comes sooner), at the latest with the run's end. So a run
that crashed after its first commit is listed (`interrupted`) and `resume` finds it; a server tells
a client a run's id before the run ends (a background run, a stream) only once its row is committed. Chosen per run (`RunOptions.durability`, the CLI's
`--durability`), per flow (the flow file's `durability:`) or per server (`serve --durability`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Coroutine
from typing import Any, Protocol

from studio.flow.spec import DURABILITIES, Durability
from studio.store.base import CallRecord, RunRecord, RunStatus, StepRecord
from studio.store.recorder import Recorder

__all__ = ["DURABILITIES", "Durability", "StepWriter", "choose", "step_writer"]

DEFAULT_DURABILITY: Durability = "sync"


def choose(run: Durability | None, flow: Durability | None, server: Durability | None = None) -> Durability:
    """The mode a run uses: the run's own, else its flow's, else the server's, else `sync`."""
    return run or flow or server or DEFAULT_DURABILITY


class StepWriter(Protocol):
    """How the engine hands one run's steps and its end to the store (through its `Recorder`)."""

    async def step(self, run_id: str, step: StepRecord, calls: list[CallRecord], last: bool = False) -> None:
        """Record a finished step (when it is durable depends on the mode); `last`: no node of the
        run is left to run, so nothing but the run's end waits on the step."""
        ...

    async def end(
        self, run_id: str, *, status: RunStatus, outputs: dict[str, Any] | None, error: str | None
    ) -> RunRecord:
        """Write every step not yet written, then make the run final; returns the run."""
        ...

    async def flush(self) -> None:
        """Write every step not yet written (a cancelled or crashed run keeps what it finished)."""
        ...


Kept = tuple[str, StepRecord, list[CallRecord]]


class SyncWriter:
    """`sync`: each step is committed before the engine goes on; the run's last step, which only
    the end waits on, is written with the end (one commit for both)."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.kept: list[Kept] = []
        """Steps written with the run's end."""

    async def step(self, run_id: str, step: StepRecord, calls: list[CallRecord], last: bool = False) -> None:
        """Commit the step now (the last one: with the end)."""
        if last:
            self.kept.append((run_id, step, calls))
        else:
            await self.recorder.finish_step(run_id, step, calls)

    def _take(self) -> list[Coroutine[Any, Any, None]]:
        kept, self.kept = self.kept, []
        return [self.recorder.finish_step(run_id, step, calls) for run_id, step, calls in kept]

    async def end(
        self, run_id: str, *, status: RunStatus, outputs: dict[str, Any] | None, error: str | None
    ) -> RunRecord:
        """Write the kept steps and the run's end, queued together so they share a commit."""
        if not self.recorder.in_order:
            await _write_all(self.recorder, self._take())
            return await self.recorder.finish_run(run_id, status=status, outputs=outputs, error=error)
        ending = self.recorder.finish_run(run_id, status=status, outputs=outputs, error=error)
        *_, record = await asyncio.gather(*self._take(), ending)
        assert isinstance(record, RunRecord)
        return record

    async def flush(self) -> None:
        """Write the kept steps (queued together: one transaction with group commit), and wait
        for every write queued before (the run's row)."""
        await _write_all(self.recorder, self._take())
        await self.recorder.settled()


class AsyncWriter(SyncWriter):
    """`async`: each step's commit runs as a background task; the end waits for all of them.

    Tasks are created in the order steps finish and queue their writes in that order, so the
    store's step rows keep the order the engine announced them in."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__(recorder)
        self.pending: list[asyncio.Task[None]] = []

    async def step(self, run_id: str, step: StepRecord, calls: list[CallRecord], last: bool = False) -> None:
        """Queue the step's commit and return at once (the last one: kept for the end's commit)."""
        if last:
            self.kept.append((run_id, step, calls))
            return
        before = self.pending[-1] if self.pending and not self.recorder.in_order else None
        self.pending = [task for task in self.pending if _unsettled(task)]
        write = self.recorder.finish_step(run_id, step, calls)
        self.pending.append(asyncio.create_task(write if before is None else _after(before, write)))

    async def flush(self) -> None:
        """Wait for every queued commit (raises the first one's error), then write the kept steps."""
        await self._steps_written()
        await super().flush()

    async def _steps_written(self, *after: Awaitable[Any]) -> list[Any]:
        """Wait for every queued step commit and for `after` (started behind them, so their writes
        queue behind the steps'); raises the first error, once all are done; returns what `after` gave."""
        pending, self.pending = self.pending, []
        results = await asyncio.gather(*pending, *after, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return results[len(pending) :]

    async def end(
        self, run_id: str, *, status: RunStatus, outputs: dict[str, Any] | None, error: str | None
    ) -> RunRecord:
        """Write the kept steps with the run's end once the queued steps are written: queued behind
        them at once where the store keeps the order of writes (so a writer that has not got to
        them yet commits them all together), else after waiting for them. A step that failed is
        raised, after the end (the engine then ends the run `failed`)."""
        if not self.recorder.in_order:
            await self._steps_written()
            return await super().end(run_id, status=status, outputs=outputs, error=error)
        (record,) = await self._steps_written(super().end(run_id, status=status, outputs=outputs, error=error))
        assert isinstance(record, RunRecord)
        return record


class ExitWriter(SyncWriter):
    """`exit`: steps are kept in memory and written with the run's end, in one group commit
    where the store has one (SQLite: the steps and the end share a transaction)."""

    async def step(self, run_id: str, step: StepRecord, calls: list[CallRecord], last: bool = False) -> None:
        """Keep the step until the run ends."""
        self.kept.append((run_id, step, calls))


async def _write_all(recorder: Recorder, writes: list[Coroutine[Any, Any, None]]) -> None:
    """Run `writes`: queued at once where the store keeps their order, else one after another."""
    if recorder.in_order:
        await asyncio.gather(*writes)
        return
    for number, write in enumerate(writes):
        try:
            await write
        except BaseException:
            for later in writes[number + 1 :]:
                later.close()  # never started: the store refused the one before
            raise


def _unsettled(task: asyncio.Task[None]) -> bool:
    """Whether a write still matters to a flush: running, or failed (its error is raised then)."""
    return not task.done() or (not task.cancelled() and task.exception() is not None)


async def _after(before: asyncio.Task[None], write: Coroutine[Any, Any, None]) -> None:
    """`write`, once the write before it is done (whether or not it failed)."""
    with contextlib.suppress(Exception):
        await asyncio.shield(before)
    await write


def step_writer(recorder: Recorder, mode: Durability) -> StepWriter:
    """The writer of one run in `mode`."""
    if mode == "async":
        return AsyncWriter(recorder)
    if mode == "exit":
        return ExitWriter(recorder)
    return SyncWriter(recorder)


async def flush_quietly(writer: StepWriter) -> None:
    """Flush a run that stops early (cancelled, or an error escaped the engine): what can be
    written is, and a failing write does not hide the reason the run stopped."""
    with contextlib.suppress(Exception):
        await writer.flush()
