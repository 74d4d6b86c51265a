"""Group commit: one writer thread per SQLite store commits every write queued meanwhile in one
transaction (one fsync), whatever run or event loop queued it.

Concurrent runs in one process (a batch, a map, the server) each wait for their own step's
commit before its dependents start, so the checkpoint rule holds; but while one transaction is
being synced to disk, the next steps queue up and go to disk together. The writer has its own
connection (WAL: readers never wait for it) with the same pragmas as every writer,
`synchronous=FULL` included. A write that fails alone is retried alone, so one bad row never
takes its neighbours down with it.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

Write = Callable[[sqlite3.Connection], None]
"""A write run inside the writer's transaction, on the writer's connection."""
MAX_BATCH = 512
"""Most writes committed in one transaction."""


class _Item:
    __slots__ = ("future", "loop", "write")

    def __init__(self, write: Write, loop: asyncio.AbstractEventLoop | None, future: asyncio.Future[None] | None):
        self.write, self.loop, self.future = write, loop, future

    def settle(self, error: BaseException | None) -> None:
        if self.future is None or self.loop is None or self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(_settle, self.future, error)


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


class GroupWriter:
    """The writer thread of one database file; started on the first write, stopped by `close`."""

    def __init__(self, path: Path, connect: Callable[[Path], sqlite3.Connection]) -> None:
        self.path, self._connect = path, connect
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.transactions = 0
        """Transactions committed so far (each one fsync)."""
        self.writes = 0
        """Writes committed so far."""

    async def write(self, write: Write) -> None:
        """Queue a write and wait until it is committed; raises what the write raised."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._put(_Item(write, loop, future))
        await future

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
        try:
            while True:
                first = self._queue.get()
                if first is None:
                    return
                batch, stop = self._drain(first)
                self._commit(conn, batch)
                if stop:
                    return
        finally:
            conn.close()

    def _drain(self, first: _Item) -> tuple[list[_Item], bool]:
        batch = [first]
        while len(batch) < MAX_BATCH:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                return batch, True
            batch.append(item)
        return batch, False

    def _commit(self, conn: sqlite3.Connection, batch: list[_Item]) -> None:
        try:
            _transaction(conn, [item.write for item in batch])
        except Exception:
            for item in batch:  # find the bad write: each alone, in its own transaction
                try:
                    _transaction(conn, [item.write])
                except Exception as err:
                    item.settle(err)
                else:
                    item.settle(None)
            return
        self.transactions += 1
        self.writes += len(batch)
        for item in batch:
            item.settle(None)


def _transaction(conn: sqlite3.Connection, writes: list[Write]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        for write in writes:
            write(conn)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
