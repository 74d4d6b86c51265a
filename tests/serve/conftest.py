"""The real server in a subprocess: `flowstudio serve` on 127.0.0.1, a free port, stopped by PID."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.conftest import FLOWSTUDIO, ROOT

SERVE_FLOWS = Path(__file__).parent / "flows"
STARTUP_S = 60.0


@dataclass
class Server:
    """One `flowstudio serve` process (or any command that prints the URL the same way)."""

    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path = ROOT
    process: subprocess.Popen[str] | None = None
    url: str = ""

    def start(self) -> Server:
        self.process = subprocess.Popen(
            self.command,
            cwd=self.cwd,
            env={**os.environ, **self.env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert self.process.stdout is not None
        deadline = time.monotonic() + STARTUP_S
        seen = []
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line and self.process.poll() is not None:
                break
            seen.append(line)
            found = re.search(r"at (http://127\.0\.0\.1:\d+)", line)
            if found:
                self.url = found.group(1)
                return self
        self.stop()
        raise AssertionError(f"the server did not start: {''.join(seen)}")

    def client(self, **kwargs: object) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60, **kwargs)  # type: ignore[arg-type]

    def kill9(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.kill(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill9()


def serve_command(path: Path, db: Path, *extra: str) -> list[str]:
    return [FLOWSTUDIO, "serve", str(path), "--port", "0", "--db", str(db), *extra]


@pytest.fixture
def flows_dir(tmp_path: Path) -> Path:
    """A copy of the served flows, free to edit."""
    target = tmp_path / "flows"
    shutil.copytree(SERVE_FLOWS, target)
    return target


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the tests that do not stop it, on a copy of the flows and a fresh store."""
    base = tmp_path_factory.mktemp("serve")
    shutil.copytree(SERVE_FLOWS, base / "flows")
    running = Server(serve_command(base / "flows", base / "runs.db")).start()
    yield running
    running.stop()
