"""A run's server-sent events: relayed live from the engine's hooks, rebuilt from the store.

Every event has one id, the same live and replayed, and ids order the events as they were sent.
Step rows number the whole ids: `run_started` 0, the i-th step row's `step_finished` 2i. What
the store's rows cannot rebuild takes `D.k`, the k-th event after the last whole number D: a
live `step_started`, a resume's `run_started`, `waiting`, `run_finished`. The server records the
id of every `step_started` and resume `run_started` it sends (table `serve_events`), so a replay
sends them under the same id; a step row no server announced (a CLI run) gets `step_started`
2i-1. A `token` is `D.k.t`, the t-th token after `D.k`: tokens are live only (the step's outputs
hold the text), so they never shift another event's id. A client that reconnects with
`Last-Event-ID` gets every event ordered after it, none twice.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from studio.store.base import RunRecord, StepRecord, step_row

Key = tuple[int, int, int]
EVENT_NAMES = ("run_started", "step_started", "token", "step_finished", "waiting", "run_finished")


@dataclass(frozen=True)
class Event:
    """One SSE event."""

    key: Key
    name: str
    data: dict[str, Any]

    @property
    def id(self) -> str:
        major, minor, token = self.key
        parts = [major, minor, token] if token else [major, minor] if minor else [major]
        return ".".join(str(part) for part in parts)

    def sse(self) -> str:
        return f"id: {self.id}\nevent: {self.name}\ndata: {json.dumps(self.data, ensure_ascii=False)}\n\n"


def parse_id(text: str) -> Key:
    """`12` → (12, 0, 0), `12.3` → (12, 3, 0), `12.3.4` → (12, 3, 4); raises ValueError for anything else."""
    parts = text.strip().split(".")
    if len(parts) > 3 or not all(part.isdigit() for part in parts):
        raise ValueError(text)
    numbers = [int(part) for part in parts] + [0] * (3 - len(parts))
    return numbers[0], numbers[1], numbers[2]


def seconds(step: StepRecord) -> float:
    start, end = dt.datetime.fromisoformat(step.started_at), dt.datetime.fromisoformat(step.ended_at)
    return round((end - start).total_seconds(), 4)


def step_data(run_id: str, step: StepRecord) -> dict[str, Any]:
    """`step_finished`'s data: the step as `flowstudio trace --json` prints it, with its seconds."""
    return {"run_id": run_id, **step_row(step), "seconds": seconds(step)}


def run_object(record: RunRecord, steps: list[StepRecord]) -> dict[str, Any]:
    """`GET /runs/{id}`: the keys of `flowstudio run --json` plus the flow, the version it ran and times."""
    return {
        "run_id": record.run_id,
        "flow": record.flow,
        "version": record.version,
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


STOPPED_EVENTS = {None: 0, "running": 0, "waiting": 2}
"""How many closing events a run stopped with this status had sent (`waiting` and `run_finished`;
one `run_finished` for any other status), so a resume numbers its events after them."""


def closing(record: RunRecord, steps: list[StepRecord], after: Key) -> list[Event]:
    """`waiting` (when the run waits) and `run_finished`, numbered after `after`."""
    major, minor, _ = after
    events = []
    if record.status == "waiting":
        minor += 1
        events.append(Event((major, minor, 0), "waiting", waiting_data(record.run_id, steps)))
    events.append(Event((major, minor + 1, 0), "run_finished", run_object(record, steps)))
    return events


def replay(record: RunRecord, steps: list[StepRecord], announced: list[Event] | None = None) -> list[Event]:
    """Every event the store can rebuild, in id order; the closing ones once the run has stopped.

    `announced`: the `step_started` (and resume `run_started`) events a server sent live, with
    their ids; a step row none of them announced gets its `step_started` at 2i-1."""
    recorded = sorted(announced or [], key=lambda event: event.key)
    events = [Event((0, 0, 0), "run_started", {"run_id": record.run_id, "flow": record.flow}), *recorded]
    unmatched = [event for event in recorded if event.name == "step_started"]
    for number, step in enumerate(steps, 1):
        finished = (2 * number, 0, 0)
        if step.status != "skipped" and not _claim(unmatched, step.node, finished):
            events.append(Event((2 * number - 1, 0, 0), "step_started", {"run_id": record.run_id, "node": step.node}))
        events.append(Event(finished, "step_finished", step_data(record.run_id, step)))
    events.sort(key=lambda event: event.key)
    if record.status != "running":
        events.extend(closing(record, steps, events[-1].key))
    return events


def _claim(announced: list[Event], node: str, before: Key) -> bool:
    """Take the latest announced start of `node` before its row's `step_finished`, if any."""
    for index in range(len(announced) - 1, -1, -1):
        event = announced[index]
        if event.key < before and event.data.get("node") == node:
            del announced[index]
            return True
    return False


def last_key(steps: list[StepRecord], announced: list[Event], stopped: str | None) -> Key:
    """The id a resume's events come after: the last event the stopped run had sent."""
    major, minor, _ = max([(2 * len(steps), 0, 0), *(event.key for event in announced)])
    return major, minor + STOPPED_EVENTS.get(stopped, 1), 0


class Channel:
    """The live events of one run task, numbered as `replay` numbers them, fanned out to listeners."""

    def __init__(self) -> None:
        self.run_id: str | None = None
        self.key: Key = (0, 0, 0)
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

    def start(self, run_id: str, flow: str, rows: int, after: Key | None = None) -> Event:
        """The engine started the run, or resumed it with `rows` step rows stored and `after` the
        id of the last event the stopped run had sent; returns the `run_started` event sent."""
        self.run_id, self.rows = run_id, rows
        data = {"run_id": run_id, "flow": flow}
        if after is None:
            self.key = (0, 0, 0)
            event = Event(self.key, "run_started", data)
            self._send(event)
            return event
        self.key = after
        return self.after("run_started", data)

    def after(self, name: str, data: dict[str, Any]) -> Event:
        """An event the store's rows cannot rebuild: `D.k`."""
        self.key = (self.key[0], self.key[1] + 1, 0)
        event = Event(self.key, name, data)
        self._send(event)
        return event

    def token(self, data: dict[str, Any]) -> None:
        """A `token`: `D.k.t`, numbered apart so that no other event's id depends on it."""
        self.key = (self.key[0], self.key[1], self.key[2] + 1)
        self._send(Event(self.key, "token", data))

    def row(self, data: Callable[[], dict[str, Any]]) -> None:
        """`step_finished`: the store has one step row more (its data made only for listeners)."""
        self.rows += 1
        self.key = (2 * self.rows, 0, 0)
        if self.listeners:
            self._send(Event(self.key, "step_finished", data()))

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
