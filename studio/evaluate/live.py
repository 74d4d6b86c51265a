"""Live progress of a running experiment, written to its stored summary while it runs.

A batch or a search started from the studio runs in its own process; the studio learns how
far it got only from the store. `LiveSummary` merges `status: running`, the process id and
the progress fields into the experiment's summary, at most every `every_s` seconds (the
final summary, `tagged` with the same launch token, replaces them when the experiment finishes). Only processes the studio started
(with `FLOWSTUDIO_LAUNCH` set) write them: a batch run in a terminal keeps its summary empty
until it finishes, as `batch --resume` documents.
"""

from __future__ import annotations

import os
import time
from typing import Any

from studio.store.base import Store, now

LAUNCH_ENV = "FLOWSTUDIO_LAUNCH"
"""Set by the studio on a process it starts: the token that ties the experiment to the launch."""


class LiveSummary:
    """Periodic progress writes for one experiment."""

    def __init__(self, store: Store, experiment_id: str, *, every_s: float = 0.5) -> None:
        self.store, self.experiment_id, self.every_s = store, experiment_id, every_s
        self.started = time.monotonic()
        self.last = 0.0

    def due(self, *, force: bool = False) -> bool:
        """Whether `update` would write now (a studio launch, and the last write old enough or
        `force`): callers check it before building costly fields."""
        return bool(os.environ.get(LAUNCH_ENV)) and (force or time.monotonic() - self.last >= self.every_s)

    def update(self, *, force: bool = False, **fields: Any) -> None:
        """Merge `fields` into the stored summary (skipped when the last write is too recent)."""
        if not self.due(force=force):
            return
        clock = time.monotonic()
        self.last = clock
        experiment = self.store.get_experiment(self.experiment_id)
        if experiment is None:
            return
        current = experiment.summary or {}
        if current.get("status") not in (None, "running"):
            return  # finished, stopped or failed already: never overwrite the outcome
        live = {
            **current,
            **fields,
            "status": "running",
            "pid": os.getpid(),
            "launch": os.environ.get(LAUNCH_ENV),
            "elapsed_s": round(clock - self.started, 3),
            "updated_at": now(),
        }
        done, total = live.get("done"), live.get("total")
        if isinstance(done, int) and isinstance(total, int) and 0 < done <= total:
            live["eta_s"] = round((clock - self.started) / done * (total - done), 1)
        self.store.finish_experiment(self.experiment_id, live)


def tagged(summary: dict[str, Any]) -> dict[str, Any]:
    """`summary` with the launch token of a studio-started process, so every write keeps it
    (the studio ties an experiment to its launch by it; a write without it would show the
    launch as a second, still starting, row)."""
    token = os.environ.get(LAUNCH_ENV)
    return {**summary, "launch": token} if token else summary
