"""Hostile-flow fixtures: a canary (a secret in the parent's environment, files outside the
sandbox, a SQLite store) and a listener on 127.0.0.1 that counts who reached it."""

from __future__ import annotations

import socket
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SECRET_ENV = "FLOWSTUDIO_CANARY_SECRET"
SECRET = "canary-7f3a9c1d0b7e4a55-secret"


@dataclass
class Canary:
    """Things a hostile flow must neither read, change nor create."""

    root: Path
    """A project folder holding the files below."""
    secret_file: Path
    """A file with SECRET in it."""
    store: Path
    """A SQLite run store holding SECRET."""
    target: Path
    """A path nothing may create."""

    def untouched(self) -> bool:
        """Nothing created, the secret file unchanged, the store's row intact."""
        with sqlite3.connect(self.store) as conn:
            rows = conn.execute("SELECT value FROM secrets").fetchall()
        return not self.target.exists() and self.secret_file.read_text() == SECRET and rows == [(SECRET,)]


@pytest.fixture
def canary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Canary:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    monkeypatch.delenv("FLOWSTUDIO_TRUST_CODE", raising=False)
    monkeypatch.delenv("FLOWSTUDIO_ROOT", raising=False)
    root = tmp_path / "project"
    root.mkdir()
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text(SECRET)
    store = tmp_path / "store.db"
    with sqlite3.connect(store) as conn:
        conn.execute("CREATE TABLE secrets (value TEXT)")
        conn.execute("INSERT INTO secrets VALUES (?)", (SECRET,))
    return Canary(root, secret_file, store, tmp_path / "pwned")


class Listener:
    """A TCP listener on 127.0.0.1 counting accepted connections."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(2)
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()
