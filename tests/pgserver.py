"""A real PostgreSQL 15 server for the tests: `initdb` and `pg_ctl` as the `postgres` user, a free
port on 127.0.0.1, trust auth, data and socket in a temp dir; stopped by its PID."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg

BIN_DIRS = [Path("/usr/lib/postgresql/15/bin"), *sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)]


def pg_bin() -> Path | None:
    """The folder of `initdb` and `pg_ctl`, or None when PostgreSQL is not installed."""
    for folder in BIN_DIRS:
        if (folder / "initdb").exists() and (folder / "pg_ctl").exists():
            return folder
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres(args: list[str]) -> list[str]:
    """Run as the `postgres` user when we are root (initdb refuses root)."""
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@dataclass
class PgServer:
    """A running cluster: where it listens and its postmaster's PID."""

    root: Path
    port: int
    pid: int

    @property
    def url(self) -> str:
        """The URL of the `postgres` database."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def new_database(self) -> str:
        """A fresh empty database; its URL."""
        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        """Stop the postmaster by its PID (fast shutdown) and remove the temp dir; it is down once
        it has removed its pid file (it may linger as a zombie where nobody reaps it)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGINT)
        pid_file = self.root / "data" / "postmaster.pid"
        for _ in range(400):
            if not pid_file.exists():
                break
            time.sleep(0.05)
        shutil.rmtree(self.root, ignore_errors=True)


def start(bin_dir: Path) -> PgServer:
    """initdb into a temp dir owned by postgres, start on a free port; returns when it accepts connections."""
    root = Path(tempfile.mkdtemp(prefix="flowstudio-pg-"))
    data, sockets = root / "data", root / "sock"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sockets, "postgres")
    initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]
    subprocess.run(_as_postgres(initdb), check=True, capture_output=True)
    port = _free_port()
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {sockets} -c max_connections=200 -c fsync=on"
    ctl = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-o", options, "-w", "start"]
    subprocess.run(_as_postgres(ctl), check=True, capture_output=True)
    pid = int((data / "postmaster.pid").read_text().split()[0])
    return PgServer(root, port, pid)
