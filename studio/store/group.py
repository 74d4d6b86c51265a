"""Group commit: one writer thread per SQLite store commits every write queued meanwhile in one
transaction (one fsync), whatever run or event loop queued it.

Concurrent runs in one process (a batch, a map, the server) each wait for their own step's
commit before its dependents start, so the checkpoint rule holds; but while one transaction is
being synced to disk, the next steps queue up and go to disk together. The writer has its own
connection (WAL: readers never wait for it) with the same pragmas as every writer,
`synchronous=FULL` included. A write that fails alone is retried alone, so one bad row never
takes its neighbours down with it. Writes nobody waits for (`post`: a run's row, a cached reply,
an event) wait up to `LINGER_S` for one that somebody does, so they share its fsync.

Several processes on one file (the workers of `flowstudio serve --workers N`) each have their own
writer. Between them, SQLite's lock alone makes a writer that finds the file locked sleep and
retry (1, 2, 5, 10 ms and longer), which at 64 runs in flight put half a second on the slowest
requests; so each transaction is also taken under an exclusive `flock` on a file beside the
database (`LOCK`), which wakes the next process the moment the last one commits.

The writer does as little as it can while holding the GIL, since the event loop needs it too
(each time the writer takes the GIL back from a busy loop it may wait a whole switch interval):
callers hand it rows already serialised, an `apply` function may write many of them with one
statement (the SQLite store's does: see `studio.store.rows`), and once a transaction is committed
it wakes each waiting event loop once (one `call_soon_threadsafe` for all of that loop's
writes), not once per write.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Write = Callable[[sqlite3.Connection], Any]
"""A write run inside the writer's transaction, on the writer's connection; what it returns is
what `GroupWriter.write` returns once the transaction is committed."""
Apply = Callable[[sqlite3.Connection, Sequence[Write]], list[Any]]
"""Runs writes in order inside one transaction and returns what each returned (it may merge them)."""
MAX_BATCH = 512
"""Most writes committed in one transaction."""
LINGER_S = 0.005
"""How long a batch that nobody waits for (only `post`ed writes: a run's row, a cached reply, an
event) waits for company before it is committed alone. A run's row is posted when the run starts
and its end (or first step) is awaited a moment later: committed apart, the two cost two fsyncs,
and the awaited one waits for both."""
LOCK = "-writer.lock"
"""The suffix of the lock file beside the database that the writers of several processes take turns on."""

try:
    import fcntl
except ImportError:  # not POSIX: SQLite's own lock alone
    fcntl = None  # type: ignore[assignment]


class _Item:
    __slots__ = ("error", "future", "loop", "result", "write")

    def __init__(self, write: Write, loop: asyncio.AbstractEventLoop | None, future: asyncio.Future[Any] | None):
        self.write, self.loop, self.future = write, loop, future
        self.result: Any = None
        self.error: BaseException | None = None


def apply_each(conn: sqlite3.Connection, writes: Sequence[Write]) -> list[Any]:
    """The plain `Apply`: each write in turn."""
    return [write(conn) for write in writes]


def _wake(batch: list[_Item]) -> None:
    """Hand each waiting loop its settled writes: one thread-safe call per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_Item]] = {}
    for item in batch:
        if item.loop is not None:
            by_loop.setdefault(item.loop, []).append(item)
    for loop, items in by_loop.items():
        with contextlib.suppress(RuntimeError):  # a loop closed meanwhile: nobody waits on it any more
            loop.call_soon_threadsafe(_settle, items)


def _settle(items: list[_Item]) -> None:
    for item in items:
        future = item.future
        if future is None or future.done():
            continue
        if item.error is None:
            future.set_result(item.result)
        else:
            future.set_exception(item.error)


class GroupWriter:
    """The writer thread of one database file; started on the first write, stopped by `close`."""

    def __init__(self, path: Path, connect: Callable[[Path], sqlite3.Connection], apply: Apply = apply_each) -> None:
        self.path, self._connect, self._apply = path, connect, apply
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._turns: int | None = None
        """The lock file's descriptor (the writer thread's own)."""
        self.transactions = 0
        """Transactions committed so far (each one fsync)."""
        self.writes = 0
        """Writes committed so far."""
        self.busy_s = 0.0
        """Seconds spent in transactions so far (SQLite's work, the fsync, retries alone)."""

    async def write(self, write: Write) -> Any:
        """Queue a write and wait until it is committed; returns what the write returned, raises what it raised."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._put(_Item(write, loop, future))
        return await future

    def post(self, write: Write) -> None:
        """Queue a write without waiting for it (it is committed before anything queued later)."""
        self._put(_Item(write, None, None))

    def close(self) -> None:
        """Commit what is queued, then stop the thread."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _put(self, item: _Item) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=f"group-commit {self.path.name}", daemon=True)
                self._thread.start()
        self._queue.put(item)

    def _serve(self) -> None:
        conn = self._connect(self.path)
        self._turns = self._open_turns()
        try:
            while True:
                first = self._queue.get()
                if first is None:
                    return
                batch = [first]
                stop = self._drain(batch)
                if not stop and all(item.future is None for item in batch):
                    stop = self._linger(batch)
                self._commit(conn, batch)
                if stop:
                    return
        finally:
            conn.close()
            if self._turns is not None:
                os.close(self._turns)

    def _open_turns(self) -> int | None:
        """The lock file the writers of several processes on this SQLite file take turns on."""
        return os.open(f"{self.path}{LOCK}", os.O_RDWR | os.O_CREAT, 0o644) if fcntl else None

    def _drain(self, batch: list[_Item]) -> bool:
        """Add the writes queued by now to `batch` (up to `MAX_BATCH`); True: `close` was asked for."""
        while len(batch) < MAX_BATCH:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return False
            if item is None:
                return True
            batch.append(item)
        return False

    def _linger(self, batch: list[_Item]) -> bool:
        """Add to a batch nobody waits for the writes queued within `LINGER_S`, until one that is
        waited for arrives (then the rest queued by then); True: `close` was asked for meanwhile."""
        deadline = time.monotonic() + LINGER_S
        while len(batch) < MAX_BATCH:
            try:
                item = self._queue.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                return False
            if item is None:
                return True
            batch.append(item)
            if item.future is not None:
                return self._drain(batch)
        return False

    def _commit(self, conn: Any, batch: list[_Item]) -> None:
        started = time.perf_counter()
        try:
            self._transaction(conn, batch)
        except Exception:
            for item in batch:  # find the bad write: each alone, in its own transaction
                try:
                    self._transaction(conn, [item])
                except Exception as err:
                    item.result, item.error = None, err
        else:
            self.transactions += 1
            self.writes += len(batch)
        self.busy_s += time.perf_counter() - started
        _wake(batch)

    def _transaction(self, conn: Any, items: list[_Item]) -> None:
        """Run `items` in one transaction on `conn` (SQLite's), each item's result kept on it."""
        if self._turns is not None:
            fcntl.flock(self._turns, fcntl.LOCK_EX)
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                results = self._apply(conn, [item.write for item in items])
                for item, result in zip(items, results, strict=True):
                    item.result = result
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            if self._turns is not None:
                fcntl.flock(self._turns, fcntl.LOCK_UN)
