"""OpenTelemetry export of runs: live through the engine's hooks, or from stored records.

Spans carry the GenAI semantic conventions and the OpenInference ones, so Phoenix, Langfuse,
Jaeger or any OTLP collector can read them. Nothing here is imported unless an endpoint is
configured (`OTEL_EXPORTER_OTLP_ENDPOINT`, `--otlp URL`); the engine never imports it.
"""

from typing import Any

from studio.telemetry.setup import ENDPOINT_ENV, capture_content, endpoint_from_env, missing_extra, say

__all__ = ["ENDPOINT_ENV", "capture_content", "endpoint_from_env", "hooks_for", "hooks_from_env"]


def hooks_from_env() -> list[Any]:
    """The engine hooks the environment asks for: an OTLP exporter when an endpoint is set."""
    url = endpoint_from_env()
    return hooks_for(url) if url else []


def hooks_for(url: str) -> list[Any]:
    """An OTLP/HTTP exporter hook sending to the traces URL `url` (none, with a note, without the extra)."""
    try:
        from studio.telemetry.hook import OtelHook
    except ImportError:
        say(missing_extra())
        return []
    return [OtelHook(url)]
