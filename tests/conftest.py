"""Shared fixtures: paths, the CLI as a real subprocess, stores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from studio.store import MemoryStore, SQLiteStore

ROOT = Path(__file__).resolve().parent.parent
FLOWS = ROOT / "flows"
FIXTURES = ROOT / "tests" / "flows"
SCRIPTS = ROOT / "tests" / "scripts"
FLOWSTUDIO = str(Path(sys.executable).parent / "flowstudio")


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


CLI = Callable[..., Result]


@pytest.fixture
def cli(tmp_path: Path) -> CLI:
    """Run `flowstudio ARGS` in a subprocess against a fresh database."""
    db = tmp_path / "flowstudio.db"

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> Result:
        environment = {**os.environ, "FLOWSTUDIO_DB": str(db), **(env or {})}
        done = subprocess.run(
            [FLOWSTUDIO, *args], capture_output=True, text=True, cwd=ROOT, env=environment, timeout=timeout
        )
        return Result(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    """A real PostgreSQL server for the session (tests/pgserver.py); skipped when none is installed."""
    from tests import pgserver

    bin_dir = pgserver.pg_bin()
    if bin_dir is None:
        pytest.skip("no PostgreSQL binary (initdb, pg_ctl) installed: apt-get install postgresql")
    server = pgserver.start(bin_dir)
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server: Any) -> str:
    """The URL of a fresh, empty database on the session's PostgreSQL server."""
    return str(postgres_server.new_database())


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore | SQLiteStore]:
    """Every store implementation, for the shared conformance suite."""
    made: MemoryStore | SQLiteStore = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "s.db")
    yield made
    made.close()
