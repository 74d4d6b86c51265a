"""MCP and OpenTelemetry cost nothing until used: the engine never imports telemetry, and neither SDK loads at startup."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT
from tests.test_layering import _imports


def test_the_engine_never_imports_telemetry() -> None:
    for path in (ROOT / "studio" / "runtime").glob("engine.py"):
        assert not {n for n in _imports(path) if n.startswith(("studio.telemetry", "opentelemetry"))}


def test_neither_sdk_is_imported_by_the_cli_the_runner_or_the_engine() -> None:
    code = (
        "import sys, studio.cli, studio.runtime.runner, studio.runtime.engine, studio.evaluate.batch, studio.node; "
        "print(sorted(m for m in ('mcp', 'opentelemetry', 'opentelemetry.sdk') if m in sys.modules))"
    )
    env = {"PATH": "/usr/bin:/bin", "OTEL_EXPORTER_OTLP_ENDPOINT": ""}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    assert out.stdout.strip() == "[]"
