"""Where spans go and what they may carry, from the environment (no OpenTelemetry import here)."""

from __future__ import annotations

import os
import sys

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
CONTENT_ENVS = ("FLOWSTUDIO_OTEL_CAPTURE_CONTENT", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
"""Either set to true/1 puts prompts, inputs and outputs on spans (`input.value`, `output.value`)."""


def endpoint_from_env() -> str | None:
    """The traces URL from the standard variables, or None when export is off."""
    if os.environ.get(TRACES_ENDPOINT_ENV):
        return os.environ[TRACES_ENDPOINT_ENV]
    base = os.environ.get(ENDPOINT_ENV)
    return traces_url(base) if base else None


def traces_url(base: str) -> str:
    """`http://host:4318` → `http://host:4318/v1/traces` (a URL already ending so is kept)."""
    base = base.rstrip("/")
    return base if base.endswith("/v1/traces") else base + "/v1/traces"


def capture_content() -> bool:
    """Whether span attributes may carry prompts, inputs and outputs."""
    return any(os.environ.get(name, "").lower() in ("1", "true", "yes") for name in CONTENT_ENVS)


def say(message: str) -> None:
    print(f"flowstudio: {message}", file=sys.stderr, flush=True)


def missing_extra() -> str:
    return "OpenTelemetry export needs the otel extra: pip install 'flowstudio[otel]'"
