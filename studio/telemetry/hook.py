"""The engine hook that exports runs live: a span per run, opened when it starts, steps as they finish.

A hook must never break a run: every failure here is swallowed, and said once.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import Span

from studio.telemetry.provider import make_provider
from studio.telemetry.setup import capture_content, say
from studio.telemetry.spans import SpanWriter


class OtelHook:
    """`Engine(store, hooks=[OtelHook(url)])`; call `close()` when the engine is done."""

    def __init__(self, url: str, exporter: Any = None) -> None:
        self.provider, self.exporter = make_provider(url, exporter)
        self.tracer = self.provider.get_tracer("flowstudio")
        self.content = capture_content()
        self._runs: dict[str, tuple[Span, SpanWriter, Any]] = {}
        self._warned = False

    def __call__(self, *, event: str, **details: Any) -> None:
        try:
            self._handle(event, details)
        except Exception as err:
            if not self._warned:
                self._warned = True
                say(f"trace export skipped a run: {type(err).__name__}: {err}")

    def _handle(self, event: str, details: dict[str, Any]) -> None:
        if event == "run_started" and "run" in details:
            run, plan = details["run"], details.get("plan")
            nodes = {n: {"type": s.type, "config": s.config} for n, s in plan.flow.spec.nodes.items()} if plan else {}
            writer = SpanWriter(self.tracer, content=self.content, node_types=nodes)
            self._runs[run.run_id] = (writer.start_run(run), writer, run)
        elif event == "step_finished" and details.get("run_id") in self._runs:
            span, writer, run = self._runs[details["run_id"]]
            writer.step(span, run, details["step"], list(details.get("calls") or []))
        elif event == "run_finished" and details.get("run_id") in self._runs:
            span, writer, _ = self._runs.pop(details["run_id"])
            writer.end_run(span, details["run"])

    def close(self) -> None:
        """Send what is queued (bounded by the export timeout) and stop."""
        self.provider.shutdown()
