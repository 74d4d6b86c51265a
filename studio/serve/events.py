"""A run's server-sent events: relayed live from the engine's hooks, rebuilt from the store.

Every event has an id that orders it. Events the store can rebuild take whole numbers:
`run_started` 0, then for the i-th step row `step_started` 2i-1 and `step_finished` 2i.
The others (`token`, a live `step_started`, `waiting`, `run_finished`, the `run_started` of a
resume) take `D.k`: the k-th event after the last whole number D. A client that reconnects
with `Last-Event-ID` gets every event ordered after it: no step row, `waiting` or
`run_finished` is lost or repeated; tokens sent while it was away are not replayed (the
step's outputs hold the text), and a `step_started` may come twice.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from studio.store.base import RunRecord, StepRecord, step_row

Key = tuple[int, int]
EVENT_NAMES = ("run_started", "step_started", "token", "step_finished", "waiting", "run_finished")


@dataclass(frozen=True)
class Event:
    """One SSE event."""

    key: Key
    name: str
    data: dict[str, Any]

    @property
    def id(self) -> str:
        major, minor = self.key
        return str(major) if minor == 0 else f"{major}.{minor}"

    def sse(self) -> str:
        return f"id: {self.id}\nevent: {self.name}\ndata: {json.dumps(self.data, ensure_ascii=False)}\n\n"


def parse_id(text: str) -> Key:
    """`12` → (12, 0), `12.3` → (12, 3); raises ValueError for anything else."""
    major, _, minor = text.strip().partition(".")
    key = (int(major), int(minor) if minor else 0)
    if key[0] < 0 or key[1] < 0:
        raise ValueError(text)
    return key


def seconds(step: StepRecord) -> float:
    start, end = dt.datetime.fromisoformat(step.started_at), dt.datetime.fromisoformat(step.ended_at)
    return round((end - start).total_seconds(), 4)


def step_data(run_id: str, step: StepRecord) -> dict[str, Any]:
    """`step_finished`'s data: the step as `flowstudio trace --json` prints it, with its seconds."""
    return {"run_id": run_id, **step_row(step), "seconds": seconds(step)}


def run_object(record: RunRecord, steps: list[StepRecord]) -> dict[str, Any]:
    """`GET /runs/{id}`: the keys of `flowstudio run --json` plus the flow and times."""
    return {
        "run_id": record.run_id,
        "flow": record.flow,
        "status": record.status,
        "outputs": record.outputs,
        "error": record.error,
        "tokens": record.tokens,
        "cost_usd": round(record.cost_usd, 10),
        "steps": [
            {
                "node": s.node,
                "status": s.status,
                "attempt": s.attempt,
                "tokens": s.tokens,
                "cost_usd": round(s.cost_usd, 10),
                "seconds": seconds(s),
                "error": s.error,
            }
            for s in steps
        ],
        "started_at": record.started_at,
        "ended_at": record.ended_at,
    }


def waiting_data(run_id: str, steps: list[StepRecord]) -> dict[str, Any]:
    """`waiting`'s data: the human.input nodes the run waits on, with their prompts."""
    last = {step.node: step for step in steps}
    asks = [{"node": s.node, "prompt": s.error} for s in last.values() if s.status == "waiting"]
    return {"run_id": run_id, "nodes": asks}


def closing(record: RunRecord, steps: list[StepRecord], after: Key) -> list[Event]:
    """`waiting` (when the run waits) and `run_finished`, numbered after `after`."""
    major, minor = after
    events = []
    if record.status == "waiting":
        minor += 1
        events.append(Event((major, minor), "waiting", waiting_data(record.run_id, steps)))
    events.append(Event((major, minor + 1), "run_finished", run_object(record, steps)))
    return events


def replay(record: RunRecord, steps: list[StepRecord]) -> list[Event]:
    """Every event the store can rebuild, in order; the closing ones once the run has stopped."""
    events = [Event((0, 0), "run_started", {"run_id": record.run_id, "flow": record.flow})]
    for number, step in enumerate(steps, 1):
        if step.status != "skipped":
            events.append(Event((2 * number - 1, 0), "step_started", {"run_id": record.run_id, "node": step.node}))
        events.append(Event((2 * number, 0), "step_finished", step_data(record.run_id, step)))
    if record.status != "running":
        events.extend(closing(record, steps, (2 * len(steps), 0)))
    return events


class Channel:
    """The live events of one run task, numbered as `replay` numbers them, fanned out to listeners."""

    def __init__(self) -> None:
        self.run_id: str | None = None
        self.key: Key = (0, 0)
        self.listeners: set[asyncio.Queue[Event | None]] = set()
        self.closed = False
        self.rows = 0

    def listen(self) -> asyncio.Queue[Event | None]:
        """A queue of every event from now on; None once the run task ends."""
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        if self.closed:
            queue.put_nowait(None)
        else:
            self.listeners.add(queue)
        return queue

    def forget(self, queue: asyncio.Queue[Event | None]) -> None:
        self.listeners.discard(queue)

    def start(self, run_id: str, flow: str, rows: int, stopped: str | None = None) -> None:
        """The engine started (or resumed) the run; `rows` step rows are in the store already and
        `stopped` is the status the run had stopped with (its closing events come first)."""
        self.run_id, self.rows = run_id, rows
        data = {"run_id": run_id, "flow": flow}
        if rows == 0 and stopped is None:
            self.key = (0, 0)
            self._send(Event(self.key, "run_started", data))
        else:
            self.key = (2 * rows, {None: 0, "running": 0, "waiting": 2}.get(stopped, 1))
            self.after("run_started", data)

    def after(self, name: str, data: dict[str, Any]) -> None:
        """An event the store cannot rebuild: `D.k`."""
        self.key = (self.key[0], self.key[1] + 1)
        self._send(Event(self.key, name, data))

    def row(self, data: dict[str, Any]) -> None:
        """`step_finished`: the store has one step row more."""
        self.rows += 1
        self.key = (2 * self.rows, 0)
        self._send(Event(self.key, "step_finished", data))

    def finish(self, record: RunRecord, steps: list[StepRecord]) -> None:
        for event in closing(record, steps, self.key):
            self.key = event.key
            self._send(event)

    def close(self) -> None:
        self.closed = True
        for queue in self.listeners:
            queue.put_nowait(None)
        self.listeners.clear()

    def _send(self, event: Event) -> None:
        for queue in self.listeners:
            queue.put_nowait(event)
