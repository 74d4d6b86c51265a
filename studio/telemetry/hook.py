"""The engine hook that exports runs live: a span per run, opened when it starts, steps as they finish.

The hook only appends the records it is handed to a bounded queue (full: dropped, never
waited for); a thread of its own builds and exports the spans in bursts (every 100 ms, or when
a run ends), so the run's thread neither waits for it nor hands it the GIL at every step.
A hook must never break a run: every failure here is swallowed, and said once.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

from opentelemetry.trace import Span

from studio.telemetry.provider import QUEUE_SIZE, make_provider
from studio.telemetry.setup import capture_content, say
from studio.telemetry.spans import SpanWriter

_CLOSE: tuple[str, dict[str, Any]] = ("close", {})
CLOSE_TIMEOUT_S = 10.0
BURST_S = 0.1


class OtelHook:
    """`Engine(store, hooks=[OtelHook(url)])`; call `close()` when the engine is done."""

    def __init__(self, url: str, exporter: Any = None) -> None:
        self.provider, self.exporter = make_provider(url, exporter)
        self.tracer = self.provider.get_tracer("flowstudio")
        self.content = capture_content()
        self.dropped = 0
        self._runs: dict[str, tuple[Span, SpanWriter, Any]] = {}
        self._warned = False
        self._events: deque[tuple[str, dict[str, Any]]] = deque()
        self._wake = threading.Event()
        self._worker = threading.Thread(target=self._work, name="flowstudio-otel", daemon=True)
        self._worker.start()

    def __call__(self, *, event: str, **details: Any) -> None:
        if event not in ("run_started", "step_finished", "run_finished"):
            return
        if len(self._events) >= QUEUE_SIZE:
            self.dropped += 1
            self._warn(f"trace export is behind; dropped events of run {details.get('run_id')}")
            return
        self._events.append((event, details))  # deque.append is atomic: no lock, no wake-up
        if event == "run_finished":
            self._wake.set()

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            say(message)

    def _work(self) -> None:
        while True:
            self._wake.wait(BURST_S)
            self._wake.clear()
            while self._events:
                event, details = self._events.popleft()
                if event == "close":
                    return
                try:
                    self._handle(event, details)
                except Exception as err:
                    self._warn(f"trace export skipped a run: {type(err).__name__}: {err}")
                time.sleep(0)  # hand the GIL back between events, so a burst never starves the run

    def _handle(self, event: str, details: dict[str, Any]) -> None:
        if event == "run_started" and "run" in details:
            run, plan = details["run"], details.get("plan")
            nodes = _node_types(plan) if plan else {}
            writer = SpanWriter(self.tracer, content=self.content, node_types=nodes)
            self._runs[run.run_id] = (writer.start_run(run), writer, run)
        elif event == "step_finished" and details.get("run_id") in self._runs:
            span, writer, run = self._runs[details["run_id"]]
            writer.step(span, run, details["step"], list(details.get("calls") or []))
        elif event == "run_finished" and details.get("run_id") in self._runs:
            span, writer, _ = self._runs.pop(details["run_id"])
            writer.end_run(span, details["run"])

    def close(self) -> None:
        """Build what is queued, send it (bounded by the export timeout) and stop."""
        self._events.append(_CLOSE)
        self._wake.set()
        self._worker.join(CLOSE_TIMEOUT_S)
        self.provider.shutdown()


def _node_types(plan: Any) -> dict[str, dict[str, Any]]:
    """The plan's nodes as the span writer reads them: type, config and the span kind the class declares."""
    return {
        node_id: {"type": spec.type, "config": spec.config, "span_kind": _kind(plan, node_id)}
        for node_id, spec in plan.flow.spec.nodes.items()
    }


def _kind(plan: Any, node_id: str) -> str:
    planned = plan.nodes.get(node_id)
    return str(getattr(planned.node, "span_kind", "")) if planned is not None else ""
