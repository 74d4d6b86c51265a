"""Durability modes: when a run's finished steps reach the store (LangGraph's `durability`).

- `sync` (the default): a step's dependents start once its row is committed. A crash loses
  only the steps in flight.
- `async`: a step's write is queued in the background and its dependents start at once; the
  run's end waits for every queued write before the run is made final. A crash loses at most
  the steps whose writes were still queued, never a finished run's record.
- `exit`: steps are kept in memory and written together with the run's end (one group
  commit). A crash before the end leaves the run with no steps: a resume runs it from the start.

The run row itself is written when the run starts in every mode, so a crashed run is always
listed (`interrupted`) and `resume` finds it. Chosen per run (`RunOptions.durability`, the CLI's
`--durability`), per flow (the flow file's `durability:`) or per server (`serve --durability`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
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

    async def step(self, run_id: str, step: StepRecord, calls: list[CallRecord]) -> None:
        """Record a finished step (when it is durable depends on the mode)."""
        ...

    async def end(
        self, run_id: str, *, status: RunStatus, outputs: dict[str, Any] | None, error: str | None
    ) -> RunRecord:
        """Write every step not yet written, then make the run final; returns the run."""
        ...

    async def flush(self) -> None:
        """Write every step not yet written (a cancelled or crashed run keeps what it finished)."""
        ...


class SyncWriter:
    """`sync`: each step is committed before the engine goes on."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    async def step(self, run_id: str, step: StepRecord, calls: list[CallRecord]) -> None:
        """Commit the step now."""
        await self.recorder.finish_step(run_id, step, calls)

    async def end(
        self, run_id: str, *, status: RunStatus, outputs: dict[str, Any] | None, error: str | None
    ) -> RunRecord:
        """Make the run final."""
        return await self.recorder.finish_run(run_id, status=status, outputs=outputs, error=error)

    async def flush(self) -> None:
        """Nothing is pending."""


class AsyncWriter(SyncWriter):
    """`async`: each step's commit runs as a background task; the end waits for all of them.

    Tasks are created in the order steps finish and queue their writes in that order, so the
    store's step rows keep the order the engine announced them in."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__(recorder)
        self.pending: list[asyncio.Task[None]] = []

    async def step(self, run_id: str, step: StepRecord, calls: list[CallRecord]) -> None:
        """Queue the step's commit and return at once."""
        before = self.pending[-1] if self.pending and not self.recorder.in_order else None
        self.pending = [task for task in self.pending if _unsettled(task)]
        write = self.recorder.finish_step(run_id, step, calls)
        self.pending.append(asyncio.create_task(write if before is None else _after(before, write)))

    async def flush(self) -> None:
        """Wait for every queued commit; raises the first one's error."""
        pending, self.pending = self.pending, []
        results = await asyncio.gather(*pending, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def end(
        self, run_id: str, *, status: RunStatus, outputs: dict[str, Any] | None, error: str | None
    ) -> RunRecord:
        """Wait for the queued steps, then make the run final."""
        await self.flush()
        return await super().end(run_id, status=status, outputs=outputs, error=error)


class ExitWriter(SyncWriter):
    """`exit`: steps are kept in memory and written with the run's end, in one group commit
    where the store has one (SQLite: the steps and the end share a transaction)."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__(recorder)
        self.buffered: list[tuple[str, StepRecord, list[CallRecord]]] = []

    async def step(self, run_id: str, step: StepRecord, calls: list[CallRecord]) -> None:
        """Keep the step until the run ends."""
        self.buffered.append((run_id, step, calls))

    def _take(self) -> list[Coroutine[Any, Any, None]]:
        buffered, self.buffered = self.buffered, []
        return [self.recorder.finish_step(run_id, step, calls) for run_id, step, calls in buffered]

    async def flush(self) -> None:
        """Write the kept steps (queued together: one transaction with group commit)."""
        await _write_all(self.recorder, self._take())

    async def end(
        self, run_id: str, *, status: RunStatus, outputs: dict[str, Any] | None, error: str | None
    ) -> RunRecord:
        """Write the kept steps and the run's end, queued together so they share a commit."""
        if not self.recorder.in_order:
            await _write_all(self.recorder, self._take())
            return await super().end(run_id, status=status, outputs=outputs, error=error)
        ending = self.recorder.finish_run(run_id, status=status, outputs=outputs, error=error)
        *_, record = await asyncio.gather(*self._take(), ending)
        assert isinstance(record, RunRecord)
        return record


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
