"""Where a server keeps what the run rows do not: its background runs and the ids of the events
the step rows cannot rebuild. One per store kind.

SQLite (one machine): `serve_background` names each background run's process; a server started
again, or a sibling worker of `flowstudio serve --workers N`, claims and resumes the runs whose
process is gone (one claim wins: the row is taken only if it still names the dead process).

PostgreSQL (replicas): `serve_queue` is a work queue. Each background run is a row with an owner
and a lease; the owner renews the lease (a heartbeat) while it drives the run. A run whose lease
ran out (its replica was killed, or hangs) is claimed by one other replica with
`SELECT ... FOR UPDATE SKIP LOCKED`, which resumes it from its checkpoints; an owner whose
renewal finds the row taken stops driving it, so no run is driven twice at once.

Cancelling a run another process drives (a sibling worker, a replica): `serve_cancels` holds the
request until the process driving the run finds it (`cancels`, polled by the run manager) and
cancels the run's task there.

Fencing: `claims` is the lease's generation, raised by every claim that changes the owner. The
owner fences each background run it drives with the generation it claimed
(`PostgresStore.fences`): every write of the run first checks, in the same transaction and under a
key-share lock on the queue row, that the row still names this owner and generation. A replica that
was paused past its lease and wakes after another claimed the run writes nothing more for it (the
write raises `LeaseLost`, and the server stops driving the run), even before its next renewal.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from studio.store.base import Store, now, process_exists

EventRow = tuple[str, int, int, str, str]
"""run_id, major, minor, name, data (JSON): one recorded event id."""
LEASE_ENV = "FLOWSTUDIO_LEASE_S"
DEFAULT_LEASE_S = 15.0
"""How long a replica's claim on a background run lasts without a heartbeat."""

_CANCELS = "CREATE TABLE IF NOT EXISTS serve_cancels (run_id TEXT PRIMARY KEY, asked_at TEXT NOT NULL)"
_SQLITE_TABLES = (
    """CREATE TABLE IF NOT EXISTS serve_background (
    run_id TEXT PRIMARY KEY, owner_pid INTEGER NOT NULL, started_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS serve_events (
    run_id TEXT NOT NULL, major INTEGER NOT NULL, minor INTEGER NOT NULL, name TEXT NOT NULL,
    data TEXT NOT NULL, PRIMARY KEY (run_id, major, minor))""",
    _CANCELS,
)
_POSTGRES_TABLES = (
    """CREATE TABLE IF NOT EXISTS serve_queue (
    run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, lease_until TIMESTAMPTZ NOT NULL, claims INTEGER NOT NULL DEFAULT 1,
    started_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS serve_events (
    run_id TEXT NOT NULL, major INTEGER NOT NULL, minor INTEGER NOT NULL, name TEXT NOT NULL,
    data TEXT NOT NULL, PRIMARY KEY (run_id, major, minor))""",
    _CANCELS,
)


class LeaseLost(Exception):
    """This server's lease on a run was taken by another server: the run's write was refused."""


class Ledger(Protocol):
    """What the run manager asks of the store beyond the store protocol."""

    shared: bool
    """Whether other servers share the store (then the manager renews leases and claims runs)."""

    def record(self, row: EventRow) -> None:
        """Keep an event id, committed before any later write of this store."""
        ...

    def announced(self, run_id: str) -> list[tuple[int, int, str, dict[str, Any]]]:
        """The run's recorded event ids, in order: major, minor, name, data."""
        ...

    def mark_background(self, run_id: str) -> None:
        """This server drives a background run (and holds its lease)."""
        ...

    def ask_cancel(self, run_id: str) -> None:
        """Ask the process that drives the run to cancel it."""
        ...

    def cancels(self, run_ids: list[str]) -> list[str]:
        """Which of `run_ids` (runs this server drives) were asked to be cancelled; takes the requests."""
        ...

    def drop_cancel(self, run_id: str) -> None:
        """Withdraw a cancel request nobody took."""
        ...

    def orphans(self) -> list[str]:
        """Background runs left `running` that nobody drives: now this server's to resume."""
        ...

    def forget(self, run_id: str) -> None:
        """This server no longer drives the run: drop its fence."""
        ...

    def renew(self, run_ids: list[str]) -> list[str]:
        """Renew this server's leases on `run_ids`; returns those another server has taken."""
        ...

    def release(self, run_ids: list[str]) -> None:
        """Give up the leases at shutdown, so another server may take the runs at once."""
        ...

    async def flush(self) -> None:
        """Wait until every write queued so far is committed."""
        ...


def ledger_for(store: Store, on_lost: Callable[[str], None] | None = None) -> Ledger:
    """The ledger of the store's kind; `on_lost(run_id)` is told (from any thread) when a fenced
    write finds the run taken by another server."""
    if hasattr(store, "pool"):
        return PostgresLedger(store, on_lost=on_lost)
    return SQLiteLedger(store)


def _post(store: Any, write: Any) -> None:
    if store.writer is None:
        with store.transaction() as conn:
            write(conn)
    else:
        store.writer.post(write)


def _nothing(conn: Any) -> None:
    """A write that only waits for what was queued before it."""


class SQLiteLedger:
    """One machine: a server started again resumes the background runs of a process that is gone."""

    shared = False

    def __init__(self, store: Any) -> None:
        self.store = store
        for sql in _SQLITE_TABLES:
            store.conn.execute(sql)

    def record(self, row: EventRow) -> None:
        def write(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT OR REPLACE INTO serve_events VALUES (?, ?, ?, ?, ?)", row)

        _post(self.store, write)

    def announced(self, run_id: str) -> list[tuple[int, int, str, dict[str, Any]]]:
        rows = self.store.conn.execute(
            "SELECT major, minor, name, data FROM serve_events WHERE run_id = ? ORDER BY major, minor", (run_id,)
        ).fetchall()
        return [(major, minor, name, json.loads(data)) for major, minor, name, data in rows]

    def mark_background(self, run_id: str) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO serve_background (run_id, owner_pid, started_at) VALUES (?, ?, ?)",
                (run_id, os.getpid(), now()),
            )

    def orphans(self) -> list[str]:
        rows = self.store.conn.execute(
            "SELECT b.run_id, b.owner_pid FROM serve_background b JOIN runs r ON r.run_id = b.run_id "
            "WHERE r.status = 'running' ORDER BY b.started_at"
        ).fetchall()
        me = os.getpid()
        gone = [(run_id, owner) for run_id, owner in rows if owner == me or not process_exists(owner)]
        if not gone:
            return []
        with self.store.transaction() as conn:  # sibling workers may look at once: one claim wins
            return [
                run_id
                for run_id, owner in gone
                if conn.execute(
                    "UPDATE serve_background SET owner_pid = ? WHERE run_id = ? AND owner_pid = ?", (me, run_id, owner)
                ).rowcount
            ]

    def ask_cancel(self, run_id: str) -> None:
        with self.store.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO serve_cancels VALUES (?, ?)", (run_id, now()))

    def cancels(self, run_ids: list[str]) -> list[str]:
        asked = {row[0] for row in self.store.conn.execute("SELECT run_id FROM serve_cancels").fetchall()}
        taken = sorted(asked.intersection(run_ids))
        if taken:
            with self.store.transaction() as conn:
                conn.executemany("DELETE FROM serve_cancels WHERE run_id = ?", [(run_id,) for run_id in taken])
        return taken

    def drop_cancel(self, run_id: str) -> None:
        with self.store.transaction() as conn:
            conn.execute("DELETE FROM serve_cancels WHERE run_id = ?", (run_id,))

    def forget(self, run_id: str) -> None:
        pass

    def renew(self, run_ids: list[str]) -> list[str]:
        return []

    def release(self, run_ids: list[str]) -> None:
        pass

    async def flush(self) -> None:
        if self.store.writer is not None:
            await self.store.writer.write(_nothing)


class PostgresLedger:
    """Replicas on one PostgreSQL: background runs as a leased work queue."""

    shared = True

    def __init__(self, store: Any, lease_s: float | None = None, on_lost: Callable[[str], None] | None = None) -> None:
        self.store = store
        self.on_lost = on_lost
        """Told the run id when a fenced write finds the run taken."""
        self.lease_s = lease_s or float(os.environ.get(LEASE_ENV) or DEFAULT_LEASE_S)
        """Seconds a claim lasts without renewal."""
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        """This server's name in the queue."""
        with store.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(7246113906)")
            for sql in _POSTGRES_TABLES:
                conn.execute(sql)

    def record(self, row: EventRow) -> None:
        fence = self.store.fences.get(row[0])

        def write(conn: Any) -> None:
            if fence is not None:
                fence(conn)
            conn.execute(
                "INSERT INTO serve_events VALUES (%s, %s, %s, %s, %s) ON CONFLICT (run_id, major, minor)"
                " DO UPDATE SET name = excluded.name, data = excluded.data",
                row,
            )

        _post(self.store, write)

    def announced(self, run_id: str) -> list[tuple[int, int, str, dict[str, Any]]]:
        with self.store.transaction() as conn:
            rows = conn.execute(
                "SELECT major, minor, name, data FROM serve_events WHERE run_id = %s ORDER BY major, minor", (run_id,)
            ).fetchall()
        return [(major, minor, name, json.loads(data)) for major, minor, name, data in rows]

    def mark_background(self, run_id: str) -> None:
        with self.store.transaction() as conn:
            row = conn.execute(
                "INSERT INTO serve_queue (run_id, owner, lease_until, started_at)"
                " VALUES (%s, %s, now() + make_interval(secs => %s), %s)"
                " ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until,"
                " claims = serve_queue.claims + (serve_queue.owner <> excluded.owner)::int RETURNING claims",
                (run_id, self.owner, self.lease_s, now()),
            ).fetchone()
        self._fence(run_id, row[0])

    def _fence(self, run_id: str, claims: int) -> None:
        """Fence the run's writes with the generation this server holds. The check's key-share lock
        is held until the write commits: a claim (`FOR UPDATE ... SKIP LOCKED`) passes the row by
        meanwhile, and a write that waited for a claim reads the claimed row; renewals (which take
        no conflicting lock) never wait for it."""

        def fence(conn: Any) -> None:
            held = conn.execute(
                "SELECT 1 FROM serve_queue WHERE run_id = %s AND owner = %s AND claims = %s FOR KEY SHARE",
                (run_id, self.owner, claims),
            ).fetchone()
            if held is None:
                if self.on_lost is not None:
                    self.on_lost(run_id)
                raise LeaseLost(f"run {run_id} was taken over by another server; its write here is refused")

        self.store.fences[run_id] = fence

    def forget(self, run_id: str) -> None:
        self.store.fences.pop(run_id, None)

    def orphans(self) -> list[str]:
        with self.store.transaction() as conn:
            rows = conn.execute(
                "SELECT q.run_id FROM serve_queue q JOIN runs r ON r.run_id = q.run_id"
                " WHERE r.status = 'running' AND q.lease_until < now()"
                " ORDER BY q.started_at LIMIT 16 FOR UPDATE OF q SKIP LOCKED"
            ).fetchall()
            taken = [row[0] for row in rows]
            claimed = conn.execute(
                "UPDATE serve_queue SET owner = %s, lease_until = now() + make_interval(secs => %s),"
                " claims = claims + 1 WHERE run_id = ANY(%s) RETURNING run_id, claims",
                (self.owner, self.lease_s, taken),
            ).fetchall()
        for run_id, claims in claimed:
            self._fence(run_id, claims)
        return taken

    def ask_cancel(self, run_id: str) -> None:
        with self.store.transaction() as conn:
            conn.execute("INSERT INTO serve_cancels VALUES (%s, %s) ON CONFLICT (run_id) DO NOTHING", (run_id, now()))

    def cancels(self, run_ids: list[str]) -> list[str]:
        if not run_ids:
            return []
        with self.store.transaction() as conn:
            rows = conn.execute(
                "DELETE FROM serve_cancels WHERE run_id = ANY(%s) RETURNING run_id", (run_ids,)
            ).fetchall()
        return sorted(row[0] for row in rows)

    def drop_cancel(self, run_id: str) -> None:
        with self.store.transaction() as conn:
            conn.execute("DELETE FROM serve_cancels WHERE run_id = %s", (run_id,))

    def renew(self, run_ids: list[str]) -> list[str]:
        if not run_ids:
            return []
        with self.store.transaction() as conn:
            kept = conn.execute(
                "UPDATE serve_queue SET lease_until = now() + make_interval(secs => %s)"
                " WHERE owner = %s AND run_id = ANY(%s) RETURNING run_id",
                (self.lease_s, self.owner, run_ids),
            ).fetchall()
        return sorted(set(run_ids) - {row[0] for row in kept})

    def release(self, run_ids: list[str]) -> None:
        if run_ids:
            with self.store.transaction() as conn:
                conn.execute(
                    "UPDATE serve_queue SET lease_until = now() WHERE owner = %s AND run_id = ANY(%s)",
                    (self.owner, run_ids),
                )

    async def flush(self) -> None:
        if self.store.writer is not None:
            await self.store.writer.write(_nothing)
