"""Export stored runs (`flowstudio trace export RUN... --otlp URL`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from studio.telemetry.provider import make_provider
from studio.telemetry.setup import capture_content
from studio.telemetry.spans import SpanWriter

if TYPE_CHECKING:
    from studio.store.base import CallRecord, RunRecord, StepRecord

StoredRun = tuple["RunRecord", list["StepRecord"], list["CallRecord"], Mapping[str, Mapping[str, Any]]]
"""A run, its steps, its model calls and its flow's nodes (id → {type, config})."""


def export_runs(runs: Iterable[StoredRun], url: str) -> tuple[int, int]:
    """Send the runs' spans to `url`; returns (spans exported, failed batches)."""
    provider, exporter = make_provider(url)
    tracer = provider.get_tracer("flowstudio")
    for run, steps, calls, nodes in runs:
        SpanWriter(tracer, content=capture_content(), node_types=nodes).run(run, steps, calls)
    provider.force_flush()
    provider.shutdown()
    return exporter.exported, exporter.failures


def gather(store: Any, run_id: str) -> StoredRun | None:
    """A stored run with what its spans need, or None when the store has no such run."""
    import yaml

    run = store.get_run(run_id)
    if run is None:
        return None
    nodes: dict[str, Any] = {}
    text = store.flow_text(run_id)
    if text:
        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError:
            document = None
        if isinstance(document, dict) and isinstance(document.get("nodes"), dict):
            nodes = {k: v for k, v in document["nodes"].items() if isinstance(v, dict)}
    return run, store.steps(run_id), store.calls(run_id), nodes
