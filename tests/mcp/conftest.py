"""Real MCP servers for the tests: the SDK's server over streamable HTTP on 127.0.0.1, and over stdio."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SERVER = Path(__file__).with_name("server.py")
STDIO = shlex.join([sys.executable, str(SERVER), "stdio"])
"""The stdio server's command line, as a user would allowlist it."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    """The test server over streamable HTTP; yields its URL."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(SERVER), "http", str(port)], stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


@pytest.fixture
def allow_stdio(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Allowlist the stdio test server for this test (and no user config file)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("FLOWSTUDIO_MCP_COMMANDS", STDIO)
    return STDIO


@pytest.fixture(autouse=True)
def _no_user_allowlist(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never read the developer's own ~/.config/flowstudio/mcp.toml."""
    if "XDG_CONFIG_HOME" not in os.environ or not os.environ["XDG_CONFIG_HOME"].startswith(str(tmp_path)):
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
