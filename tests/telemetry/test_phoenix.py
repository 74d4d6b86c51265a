"""A real OTLP backend: Arize Phoenix on 127.0.0.1, reading exported spans back through its REST API.

Phoenix is a large install with pins of its own, so it lives in a virtualenv of its own,
made on first use in ~/.cache/flowstudio/test-venvs (reused after; `FLOWSTUDIO_PHOENIX_PYTHON`
names another interpreter that has it). The first run installs it from PyPI (minutes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FLOWS, SCRIPTS
from tests.mcp.conftest import free_port, stop

pytestmark = pytest.mark.slow

PHOENIX = "arize-phoenix==20.26.1"
VENV = Path.home() / ".cache" / "flowstudio" / "test-venvs" / PHOENIX.replace("==", "-")


def phoenix_python() -> str:
    """An interpreter with Phoenix installed, installing it on first use."""
    given = os.environ.get("FLOWSTUDIO_PHOENIX_PYTHON")
    if given:
        return given
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", PHOENIX], check=True, timeout=1800)
    return str(python)


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Phoenix server on 127.0.0.1 with an empty working directory; yields its base URL."""
    python = phoenix_python()
    port, grpc = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(tmp_path_factory.mktemp("phoenix")),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
    }
    process = subprocess.Popen(
        [python, "-m", "phoenix.server.main", "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            assert process.poll() is None, "phoenix exited"
            try:
                _get(f"{url}/v1/projects")
                break
            except OSError:
                assert time.monotonic() < deadline, "phoenix did not start"
                time.sleep(0.5)
        yield url
    finally:
        stop(process)  # type: ignore[arg-type]


def _spans(url: str, run_id: str, expected: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 30
    while True:
        page = _get(f"{url}/v1/projects/default/spans?limit=1000")["data"]
        trace_ids = {s["context"]["trace_id"] for s in page if s["attributes"].get("flowstudio.run_id") == run_id}
        spans = [s for s in page if s["context"]["trace_id"] in trace_ids]
        if len(spans) >= expected or time.monotonic() > deadline:
            return spans
        time.sleep(0.5)


@pytest.mark.timeout(2400)
def test_phoenix_receives_runs_live_and_stored_with_their_attributes(cli, phoenix: str) -> None:  # type: ignore[no-untyped-def]
    flow, script = FLOWS / "calculator-agent.yaml", f"default=scripted/{SCRIPTS / 'calculator-agent.yaml'}"
    env = {"FLOWSTUDIO_OTEL_CAPTURE_CONTENT": "1"}
    ran = cli(
        "run", str(flow), "-i", "question=What is 12 times 7?", "--model", script, "--otlp", phoenix, "--json", env=env
    )
    assert ran.code == 0 and "cannot export" not in ran.err, ran.err
    run_id = ran.json()["run_id"]
    spans = {s["name"]: s for s in _spans(phoenix, run_id, 5)}
    run, step = spans["run calculator-agent"], spans["invoke_agent agent"]
    assert run["span_kind"] == "CHAIN" and run["parent_id"] is None
    assert run["attributes"]["flowstudio.flow"] == "calculator-agent"
    assert step["span_kind"] == "AGENT" and step["parent_id"] == run["context"]["span_id"]
    model = next(s for n, s in spans.items() if n.startswith("text_completion "))
    assert model["span_kind"] == "LLM" and model["parent_id"] == step["context"]["span_id"]
    attributes = model["attributes"]
    assert attributes["gen_ai.provider.name"] == "flowstudio.scripted"
    assert attributes["gen_ai.operation.name"] == "text_completion"
    assert attributes["gen_ai.usage.input_tokens"] > 0 and attributes["gen_ai.usage.output_tokens"] > 0
    assert "Question: What is 12 times 7?" in attributes["input.value"]
    tool = spans["execute_tool calculator"]
    assert tool["span_kind"] == "TOOL" and tool["attributes"]["output.value"] == "84"

    exported = cli("trace", "export", run_id, "--otlp", phoenix, "--json")
    assert exported.code == 0, exported.err
    assert exported.json()["spans"] == 5 and exported.json()["failed_batches"] == 0
    both = _spans(phoenix, run_id, 10)
    assert len(both) == 10 and len({s["context"]["trace_id"] for s in both}) == 2
