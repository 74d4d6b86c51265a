"""The tracer provider: OTLP over HTTP behind a bounded batch queue that never stalls a run."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from studio.telemetry.setup import say

QUEUE_SIZE = 2048
"""Spans waiting for export; past this they are dropped, never waited for."""
EXPORT_TIMEOUT_S = 3.0
RETRY_AFTER_S = 60.0
"""After a failed export, batches are dropped (at once) for this long before trying again."""


def make_provider(url: str, exporter: SpanExporter | None = None) -> tuple[TracerProvider, OnceExporter]:
    """A tracer provider exporting to `url` (or to `exporter`, for measurements) through a bounded queue."""
    # The OTLP exporter logs every failed batch; OnceExporter says it once instead.
    logging.getLogger("opentelemetry.exporter.otlp.proto.http").setLevel(logging.CRITICAL + 1)
    logging.getLogger("opentelemetry.sdk.trace.export").setLevel(logging.CRITICAL + 1)
    once = OnceExporter(exporter or OTLPSpanExporter(endpoint=url, timeout=EXPORT_TIMEOUT_S), url)
    provider = TracerProvider(resource=Resource.create({"service.name": "flowstudio"}))
    provider.add_span_processor(
        BatchSpanProcessor(
            once,
            max_queue_size=QUEUE_SIZE,
            schedule_delay_millis=200,
            max_export_batch_size=128,  # shorter encodes hold the GIL for less at a time
            export_timeout_millis=int(EXPORT_TIMEOUT_S * 1000),
        )
    )
    return provider, once


class OnceExporter(SpanExporter):
    """Wraps an exporter: a failure is reported once, then batches are dropped for a while."""

    def __init__(self, inner: SpanExporter, url: str) -> None:
        self.inner = inner
        self.url = url
        self.failures = 0
        self.exported = 0
        self._down_until = 0.0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if time.monotonic() < self._down_until:
            self.failures += 1
            return SpanExportResult.FAILURE
        try:
            result = self.inner.export(spans)
        except Exception:
            result = SpanExportResult.FAILURE
        if result == SpanExportResult.SUCCESS:
            self.exported += len(spans)
            return result
        with self._lock:
            self.failures += 1
            self._down_until = time.monotonic() + RETRY_AFTER_S
            if self.failures == 1:
                say(f"cannot export traces to {self.url} (runs go on; their spans are dropped)")
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
