"""The SQLite store's writes as rows: serialised once by the caller, many to a statement in the writer.

A write (`InsertRun`, `InsertStep`, `EndRun`, `PutCache`) is built on the caller's thread: the
record is read field by field (no `asdict`, which deep-copies every nested value), masked, and
its JSON columns encoded, so the row is a snapshot taken when the write was asked for. Each
write can run alone (`write(conn)`: one transaction per write, a write retried alone), and
`apply_rows` runs a whole group-commit batch with one multi-row statement per table: the
writer thread then takes the GIL back from the event loop a few times per transaction instead
of three times per step.

Within a batch the writes keep their meaning: runs are inserted before steps, steps get their
ids in queue order, a run's totals are added before its end is written (and read back with
`RETURNING`), and cache puts keep their order (a later put of a key wins). A write of another
kind (any `Write`) is run where it stands, between the merged groups before and after it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, is_dataclass
from functools import cache
from typing import Any, TypeVar

from studio import secrets
from studio.store.base import CallRecord, ExperimentRecord, RunFilter, RunRecord, RunStatus, StepRecord, as_read, now

JSON_COLUMNS = frozenset({"inputs", "outputs", "request", "options"})
"""Columns kept as JSON text."""
BOOL_COLUMNS = frozenset({"cached", "reused", "cache_hit"})
"""Columns kept as 0/1."""
COLUMNS = {cls: tuple(f.name for f in fields(cls)) for cls in (RunRecord, StepRecord, CallRecord)}
"""Each record's columns, in field order."""
LIVE = ("running", "interrupted")
"""Statuses told apart only when read: the process of a `running` row may be gone."""
MAX_ROWS = 64
"""Most rows in one multi-row statement (bounds the distinct statements the writer compiles and caches)."""
CACHED_STATEMENTS = 512
"""The writer connection's statement cache: every multi-row shape of every table stays compiled."""

Record = TypeVar("Record", RunRecord, StepRecord, CallRecord)

_CONVERT = {
    cls: tuple((i, name in JSON_COLUMNS) for i, name in enumerate(names) if name in JSON_COLUMNS | BOOL_COLUMNS)
    for cls, names in COLUMNS.items()
}


def _plain(value: Any) -> Any:
    """A dataclass nested in a record's JSON, as `asdict` would have made it; nothing else is JSON."""
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


encode = json.JSONEncoder(default=_plain).encode
"""`json.dumps` (the same text), without building an encoder per call."""


def values(record: RunRecord | StepRecord | CallRecord) -> list[Any]:
    """The record's column values, masked, JSON as text and booleans as 0/1.

    `secrets.mask` returns the list as it is when no secret is known.
    """
    row: list[Any] = secrets.mask([getattr(record, name) for name in COLUMNS[type(record)]])
    for index, is_json in _CONVERT[type(record)]:
        value = row[index]
        if is_json:
            row[index] = None if value is None else encode(value)
        else:
            row[index] = int(value)
    return row


def from_row(cls: type[Record], row: dict[str, Any]) -> Record:
    """The record a row holds (by column name; other columns are left out), JSON decoded, as read."""
    names = {f.name for f in fields(cls)}
    found = {k: v for k, v in row.items() if k in names}
    for key in JSON_COLUMNS & found.keys():
        found[key] = json.loads(found[key]) if found[key] is not None else None
    for key in BOOL_COLUMNS & found.keys():
        found[key] = bool(found[key])
    if cls is RunRecord and found.get("options") is None:
        found["options"] = {}
    record = cls(**found)
    if isinstance(record, RunRecord):
        as_read(record)
    return record


def ended(run_id: str, row: tuple[Any, ...] | None) -> RunRecord:
    """The run an `EndRun` made final, from the row it read back."""
    assert row is not None, f"no run {run_id}"
    return from_row(RunRecord, dict(zip(COLUMNS[RunRecord], row, strict=True)))


def run_where(where: RunFilter | None, mark: str, begins: str) -> tuple[str, list[str]]:
    """The SQL `WHERE` clause of a run filter (None: every run), with its parameters. `mark` is the
    driver's placeholder, `begins` the dialect's test that `version` begins with a parameter;
    `interrupted` is asked for as `running` (it is told apart once read)."""
    where = where or RunFilter()
    tests = [
        (f"flow = {mark}", where.flow),
        (f"status = {mark}", "running" if where.status in LIVE else where.status),
        (f"started_at >= {mark}", where.since),
        (f"started_at < {mark}", where.until),
        (f"experiment_id = {mark}", where.experiment_id),
        (begins, where.version),
    ]
    used = [(test, value) for test, value in tests if value is not None]
    clause = "WHERE " + " AND ".join(test for test, _ in used) if used else ""
    return clause, [value for _, value in used]


def experiment_from_row(row: dict[str, Any]) -> ExperimentRecord:
    """The experiment an `experiments` row holds, JSON decoded."""
    return ExperimentRecord(
        experiment_id=row["experiment_id"],
        kind=row["kind"],
        flow=row["flow"],
        config=json.loads(row["config"]) if row["config"] else {},
        summary=json.loads(row["summary"]) if row["summary"] else None,
        created_at=row["created_at"],
    )


@dataclass(frozen=True, slots=True)
class InsertRun:
    """A new run: its row (the run's columns, then its flow text)."""

    row: tuple[Any, ...]

    @classmethod
    def of(cls, run: RunRecord, flow_text: str | None) -> InsertRun:
        return cls((*values(run), flow_text))

    def __call__(self, conn: sqlite3.Connection) -> None:
        apply_rows(conn, [self])


@dataclass(frozen=True, slots=True)
class InsertStep:
    """A finished step (the checkpoint): its row, its model calls' rows, and what it adds to the run."""

    run_id: str
    row: tuple[Any, ...]
    """The step's columns."""
    calls: tuple[tuple[Any, ...], ...]
    """Each call's columns (the run and step ids are added when the step has its id)."""
    tokens: int
    cost_usd: float

    @classmethod
    def of(cls, run_id: str, step: StepRecord, calls: list[CallRecord]) -> InsertStep:
        rows = tuple(tuple(values(call)) for call in calls)
        return cls(run_id, tuple(values(step)), rows, step.tokens, step.cost_usd)

    def __call__(self, conn: sqlite3.Connection) -> None:
        apply_rows(conn, [self])


@dataclass(frozen=True, slots=True)
class EndRun:
    """A run made final; running it returns the run's row as it now stands (None: no such run)."""

    run_id: str
    status: RunStatus
    outputs: str | None
    """JSON text, masked."""
    error: str | None
    ended_at: str

    @classmethod
    def of(cls, run_id: str, status: RunStatus, outputs: dict[str, Any] | None, error: str | None) -> EndRun:
        text = encode(secrets.mask(outputs)) if outputs is not None else None
        return cls(run_id, status, text, secrets.mask(error), now())

    def __call__(self, conn: sqlite3.Connection) -> tuple[Any, ...] | None:
        result: tuple[Any, ...] | None = apply_rows(conn, [self])[0]
        return result


@dataclass(frozen=True, slots=True)
class PutCache:
    """A model reply for the LLM cache (a later put of the same key replaces it)."""

    row: tuple[str, str, str, str]
    """key, model, response (JSON text, masked), created_at."""

    @classmethod
    def of(cls, key: str, model: str, response: dict[str, Any]) -> PutCache:
        return cls((key, model, encode(secrets.mask(response)), now()))

    def __call__(self, conn: sqlite3.Connection) -> None:
        apply_rows(conn, [self])


_RUN_COLUMNS = (*COLUMNS[RunRecord], "flow_text")
_STEP_COLUMNS = ("run_id", *COLUMNS[StepRecord])
_CALL_COLUMNS = ("run_id", "step_id", *COLUMNS[CallRecord])
_ROWS = (InsertRun, InsertStep, EndRun, PutCache)


def apply_rows(conn: sqlite3.Connection, writes: Sequence[Any]) -> list[Any]:
    """Run `writes` in order in the open transaction, each run of row writes merged; returns each one's result."""
    results: list[Any] = [None] * len(writes)
    group: list[int] = []
    ending: set[str] = set()
    for index, write in enumerate(writes):
        if not isinstance(write, _ROWS):
            _flush(conn, writes, group, results)
            group, ending = [], set()
            results[index] = write(conn)
            continue
        if isinstance(write, EndRun):
            if write.run_id in ending:  # a run ended twice: the second one after the first
                _flush(conn, writes, group, results)
                group, ending = [], set()
            ending.add(write.run_id)
        group.append(index)
    _flush(conn, writes, group, results)
    return results


def _flush(conn: sqlite3.Connection, writes: Sequence[Any], group: list[int], results: list[Any]) -> None:
    batch = [(i, writes[i]) for i in group]
    runs = [w.row for _, w in batch if isinstance(w, InsertRun)]
    steps = [w for _, w in batch if isinstance(w, InsertStep)]
    ends = [(i, w) for i, w in batch if isinstance(w, EndRun)]
    cached = [w.row for _, w in batch if isinstance(w, PutCache)]
    _insert(conn, "INSERT INTO runs", _RUN_COLUMNS, runs)
    _steps(conn, steps)
    if ends:
        found = _end(conn, [w for _, w in ends])
        for index, write in ends:
            results[index] = found.get(write.run_id)
    _insert(conn, "INSERT OR REPLACE INTO cache", ("key", "model", "response", "created_at"), cached)


def _steps(conn: sqlite3.Connection, steps: list[InsertStep]) -> None:
    if not steps:
        return
    if any(step.calls for step in steps):
        # Explicit ids (the writer holds the write lock: nobody inserts meanwhile), so each call names its step.
        first = int(conn.execute("SELECT coalesce(max(id), 0) FROM steps").fetchall()[0][0]) + 1
        numbered = list(enumerate(steps, start=first))
        _insert(conn, "INSERT INTO steps", ("id", *_STEP_COLUMNS), [(i, s.run_id, *s.row) for i, s in numbered])
        calls = [(s.run_id, i, *call) for i, s in numbered for call in s.calls]
        _insert(conn, "INSERT INTO llm_calls", _CALL_COLUMNS, calls)
    else:
        _insert(conn, "INSERT INTO steps", _STEP_COLUMNS, [(s.run_id, *s.row) for s in steps])
    totals: dict[str, list[Any]] = {}
    for step in steps:
        total = totals.setdefault(step.run_id, [step.run_id, 0, 0.0, 0])
        total[1] += step.tokens
        total[2] += step.cost_usd
        total[3] += 1
    for chunk in _chunks(list(totals.values()), 4):
        conn.execute(_add_sql(len(chunk)), [value for row in chunk for value in row])


def _end(conn: sqlite3.Connection, ends: list[EndRun]) -> dict[str, tuple[Any, ...]]:
    found: dict[str, tuple[Any, ...]] = {}
    rows = [(e.run_id, e.status, e.outputs, e.error, e.ended_at) for e in ends]
    for chunk in _chunks(rows, 5):
        for ended in conn.execute(_end_sql(len(chunk)), [value for row in chunk for value in row]).fetchall():
            found[ended[0]] = tuple(ended)
    return found


def _insert(conn: sqlite3.Connection, head: str, columns: tuple[str, ...], rows: Sequence[Sequence[Any]]) -> None:
    for chunk in _chunks(rows, len(columns)):
        conn.execute(_insert_sql(head, columns, len(chunk)), [value for row in chunk for value in row])


def _chunks(rows: Sequence[Any], width: int) -> list[Sequence[Any]]:
    """`rows` cut so no statement has more than MAX_ROWS rows or more parameters than SQLite takes."""
    size = max(1, min(MAX_ROWS, 999 // width))
    return [rows[start : start + size] for start in range(0, len(rows), size)]


def _marks(width: int, count: int) -> str:
    one = "(" + ", ".join("?" * width) + ")"
    return ", ".join([one] * count)


@cache
def _insert_sql(head: str, columns: tuple[str, ...], count: int) -> str:
    return f"{head} ({', '.join(columns)}) VALUES {_marks(len(columns), count)}"


@cache
def _add_sql(count: int) -> str:
    return (
        "UPDATE runs SET tokens = tokens + v.column2, cost_usd = cost_usd + v.column3, steps = steps + v.column4 "
        f"FROM (VALUES {_marks(4, count)}) AS v WHERE runs.run_id = v.column1"
    )


@cache
def _end_sql(count: int) -> str:
    return (
        "UPDATE runs SET status = v.column2, outputs = v.column3, error = v.column4, ended_at = v.column5 "
        f"FROM (VALUES {_marks(5, count)}) AS v WHERE runs.run_id = v.column1 "
        f"RETURNING {', '.join(COLUMNS[RunRecord])}"
    )
