"""Starting the studio: a free port on 127.0.0.1 and the Streamlit command line."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

from studio.app import MAIN
from studio.app.settings import DIR_ENV

LOOPBACK = "127.0.0.1"


def free_port(address: str = LOOPBACK) -> int:
    """A port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((address, 0))
        return int(probe.getsockname()[1])


def streamlit_command(port: int, address: str = LOOPBACK, script: Path = MAIN) -> list[str]:
    """`streamlit run` on the app (or another script), headless, without usage statistics or file watching."""
    return [
        sys.executable, "-m", "streamlit", "run", str(script),
        "--server.address", address,
        "--server.port", str(port),
        "--server.headless", "true",
        "--server.fileWatcherType", "none",
        "--browser.gatherUsageStats", "false",
        "--client.toolbarMode", "minimal",
    ]  # fmt: skip


def studio_env(db: Path, flows_dir: Path) -> dict[str, str]:
    """The environment the app reads its settings from."""
    return {**os.environ, "FLOWSTUDIO_DB": str(db.resolve()), DIR_ENV: str(flows_dir.resolve())}
