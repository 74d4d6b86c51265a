"""A run started from the editor: it goes on in a thread while the canvas shows each node's status."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studio.errors import FlowError
from studio.store.base import StepRecord


@dataclass
class EditorRun:
    """Shared between the run's thread and the page; the page only reads it."""

    statuses: dict[str, str]
    run_id: str | None = None
    error: str | None = None
    status: str = "running"
    """`running`, then the run's own status (`succeeded`, `failed`, `waiting`) or `error`."""
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] | None = None
    """The flow's outputs, once it ended."""
    steps: dict[str, StepRecord] = field(default_factory=dict)
    """Each of the flow's own nodes' last finished step (inputs, outputs, error)."""
    tokens: dict[str, str] = field(default_factory=dict)
    """Text streamed so far by each node (the engine's `token` events), by the flow's own node id."""
    thread: threading.Thread | None = field(default=None, repr=False)
    changed: threading.Event = field(default_factory=threading.Event, repr=False)
    """Set by every event of the run (and its end): the page redraws soon after, not on a fixed beat."""

    @property
    def done(self) -> bool:
        return self.status != "running"

    def wait(self, least: float, most: float) -> None:
        """Sleep `least` seconds (tokens that come together are drawn together), then until the run
        changes or `most` seconds have passed in all."""
        time.sleep(least)
        self.changed.wait(max(0.0, most - least))
        self.changed.clear()

    def hook(self, *, event: str, **details: Any) -> None:
        try:
            self._record(event, details)
        finally:
            self.changed.set()

    def _record(self, event: str, details: dict[str, Any]) -> None:
        if event == "token":
            node = _own_node(str(details.get("node", "")))
            self.tokens[node] = self.tokens.get(node, "") + str(details.get("text", ""))
            return
        if event == "run_started":
            self.run_id = str(details["run_id"])
        if event == "step_started" and details.get("node") in self.statuses:
            self.statuses[str(details["node"])] = "running"
        step = details.get("step")
        if event == "step_finished" and isinstance(step, StepRecord) and "[" not in step.node:
            self.statuses[step.node] = "cached" if step.status == "succeeded" and step.cached else step.status
            self.steps[step.node] = step

    def node_errors(self) -> dict[str, str]:
        """The error of each node whose step failed."""
        return {node: step.error for node, step in self.steps.items() if step.status == "failed" and step.error}


def _own_node(path: str) -> str:
    """`map[2].summarise` or `call.answer` → the run's own node (`map`, `call`)."""
    return re.split(r"[.\[]", path, maxsplit=1)[0]


def start_run(path: Path, values: dict[str, Any], nodes: list[str], db: Path | str) -> EditorRun:
    """Run the saved flow at `path` in a thread; every node starts as `pending`."""
    run = EditorRun(statuses=dict.fromkeys(nodes, "pending"), inputs=dict(values))

    def work() -> None:
        from studio.runtime.engine import RunOptions
        from studio.runtime.runner import run_flow_async
        from studio.versions.snapshot import working_id

        try:  # streamed: the playground shows the running LLM node's tokens as they arrive
            options = RunOptions(stream=True, version=working_id(path))  # what `flowstudio run FILE` records
            result = asyncio.run(run_flow_async(path, values, options=options, db=db, hooks=[run.hook]))
            run.run_id, run.outputs, run.error = result.run_id, result.outputs, result.error
            run.status = result.status  # last: the page takes `done` to mean everything above is set
        except FlowError as err:
            run.error, run.status = str(err), "error"
        except Exception as err:  # the page must learn that the thread died, whatever happened
            run.error, run.status = f"{type(err).__name__}: {err}", "error"
        finally:
            run.changed.set()

    run.thread = threading.Thread(target=work, name="editor-run", daemon=True)
    run.thread.start()
    return run
