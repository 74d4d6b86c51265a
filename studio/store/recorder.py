"""How the engine writes a run into a store: the store's own writes, awaited.

A store implements only the synchronous protocol (`studio.store.base`): `create_run`, `finish_step`,
`finish_run` and `cache_put` each return once their one transaction is committed. The engine
writes through a `Recorder` instead, whose operations have the same names and meanings but are
awaited. On a store with a group-commit writer (`GroupCommitted`: the SQLite and PostgreSQL
stores) a write is queued there as a row write of `studio.store.rows` and shares a transaction
with the writes queued meanwhile; it returns once that transaction is committed (a step's
dependents start only then). On any other store (memory, a store opened with
`group_commit=False`) the store's own operation runs at once. When steps reach the store at all
is the durability mode's choice (`studio.runtime.durability`), on top of this.
"""

from __future__ import annotations

from typing import Any, Protocol

from studio.store.base import CallRecord, RunRecord, RunStatus, StepRecord, Store
from studio.store.group import GroupWriter
from studio.store.rows import EndRun, InsertRun, InsertStep, PutCache, ended


class GroupCommitted(Protocol):
    """A store that can queue the engine's writes on a group-commit writer, which takes the row
    writes of `studio.store.rows` (an `EndRun` returns the run's row as it now stands)."""

    writer: GroupWriter | None
    """The writer; None when every write is its own transaction."""


class Recorder:
    """The engine's writes into one store, awaited (and the LLM cache, read and written)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        writer = (
            store.writer if hasattr(store, "writer") else None
        )  # `GroupCommitted` (isinstance of a protocol is slow)
        self.writer: GroupWriter | None = writer
        """The store's group-commit writer; None: each write is the store's own operation, at once."""

    @property
    def in_order(self) -> bool:
        """Whether writes may be queued together: a group-commit writer commits them in the order
        they were queued; else each must wait for the one before."""
        return self.writer is not None

    def create_run(self, run: RunRecord, flow_text: str | None = None) -> None:
        """Record a new run, with the flow text it runs (`RunStore.create_run`). On a group-commit
        writer the row is queued, not awaited: it is committed before (or with) any write queued
        after it, so the run's first awaited write (a `sync` step, the end) makes it durable too,
        and otherwise once the writer's linger is over (`studio.store.group.LINGER_S`);
        `settled` waits for it where someone must find the run before that (a background run's id)."""
        if self.writer is None:
            self.store.create_run(run, flow_text)
        else:
            self.writer.post(InsertRun.of(run, flow_text))

    async def settled(self) -> None:
        """Wait until every write queued so far is committed (the run rows `create_run` queued)."""
        if self.writer is not None:
            await self.writer.write(_nothing)

    async def finish_step(self, run_id: str, step: StepRecord, calls: list[CallRecord]) -> None:
        """Write a finished step and its calls; returns once it is durable (`RunStore.finish_step`)."""
        if self.writer is None:
            self.store.finish_step(run_id, step, calls)
        else:
            await self.writer.write(InsertStep.of(run_id, step, calls))

    async def finish_run(
        self, run_id: str, *, status: RunStatus, outputs: dict[str, Any] | None, error: str | None
    ) -> RunRecord:
        """Make a run final, after every write queued before; returns it (`RunStore.finish_run`)."""
        if self.writer is None:
            return self.store.finish_run(run_id, status=status, outputs=outputs, error=error)
        return ended(run_id, await self.writer.write(EndRun.of(run_id, status, outputs, error)))

    def cache_get(self, key: str) -> dict[str, Any] | None:
        """The store's cached reply under `key` (`LLMCache.cache_get`)."""
        return self.store.cache_get(key)

    def cache_put(self, key: str, model: str, response: dict[str, Any]) -> None:
        """Store a reply under `key` without waiting for it: queued, it is durable no later than
        the step that made the call (`LLMCache.cache_put`)."""
        if self.writer is None:
            self.store.cache_put(key, model, response)
        else:
            self.writer.post(PutCache.of(key, model, response))


def _nothing(conn: object) -> None:
    """A write that only waits for the writes queued before it."""
