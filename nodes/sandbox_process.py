"""The parent's side of a sandboxed child (`code.python`): start it, feed it its payload, read its
output within a budget, stop it at the wall time, and collect what it reports.

Pipes are always read to their end (past the budget, into nothing): asyncio's `wait()` returns
only once they are closed. A stopped child's whole process group is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from nodes import sandbox

READ_CHUNK = 65536
KILL_GRACE_S = 5.0
MAX_OUTCOME_BYTES = 64 << 20


@dataclass(frozen=True)
class Finished:
    """How a child ended."""

    stopped: str | None
    """The limit this side stopped it for (output size, wall time), or None."""
    stdout: bytes
    stderr: bytes
    outcome: dict[str, Any]
    """The object the child reported (`ok`, `result`, `message`, `limit`); {} when none."""
    returncode: int | None
    """Its exit code; a signal that ended it is negative, also through bubblewrap."""
    exit_code: int | None
    """The exit code of the process started (bubblewrap's own when sandboxed)."""


@dataclass(frozen=True)
class Budget:
    """What this side enforces."""

    wall_s: float
    """Seconds the child may take in all."""
    output_kb: int
    """Most output (stdout and stderr together), in KiB."""


async def run_child(payload: bytes, limits: dict[str, int], budget: Budget, *, trusted: bool) -> Finished:
    """Run the child on `payload` in the sandbox (a plain process when `trusted`); the child applies `limits` itself."""
    limits_json = json.dumps(limits)
    read_end, write_end = os.pipe()
    filter_fd = None if trusted else sandbox.seccomp_fd()
    try:
        with tempfile.TemporaryDirectory(prefix="flowstudio-code-") as work:
            if trusted:
                args = [sys.executable, "-I", "-S", "-B", str(sandbox.CHILD), limits_json, str(write_end)]
                env = {"LC_ALL": "C.UTF-8"}
            else:
                args, env = sandbox.command(limits_json, write_end, filter_fd), {}
            proc = await asyncio.create_subprocess_exec(
                *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=work, env=env, start_new_session=True,
                pass_fds=tuple(fd for fd in (write_end, filter_fd) if fd is not None),
            )  # fmt: skip
            os.close(write_end)
            write_end = -1
            stopped, out, err, text = await _supervise(proc, payload, read_end, budget)
    finally:
        for fd in (read_end, write_end, filter_fd):
            if fd is not None and fd >= 0:
                os.close(fd)
    returncode = proc.returncode
    if not trusted and returncode is not None and returncode > 128:
        returncode = 128 - returncode  # bwrap exits with 128 + the signal that ended the child
    return Finished(stopped, out, err, _outcome(text), returncode, proc.returncode)


async def _supervise(
    proc: asyncio.subprocess.Process, payload: bytes, outcome_fd: int, budget: Budget
) -> tuple[str | None, bytes, bytes, bytes]:
    """Feed the payload, collect output and the outcome; the limit that stopped the child, or None."""
    assert proc.stdin and proc.stdout and proc.stderr
    allowed = budget.output_kb << 10
    chunks: dict[int, list[bytes]] = {1: [], 2: [], 3: []}
    outcome = await _reader(outcome_fd)
    total, stopped = 0, None

    async def drain(stream: asyncio.StreamReader, key: int) -> None:
        nonlocal total, stopped
        while chunk := await stream.read(READ_CHUNK):
            if key == 3:
                if sum(map(len, chunks[3])) < MAX_OUTCOME_BYTES:
                    chunks[3].append(chunk)
                continue
            total += len(chunk)
            if total <= allowed:
                chunks[key].append(chunk)
            elif stopped is None:
                stopped = f"output limit ({budget.output_kb} KiB) exceeded"
                _kill(proc.pid)

    async def feed() -> None:
        assert proc.stdin
        try:
            proc.stdin.write(payload)
            await proc.stdin.drain()
            proc.stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def finish() -> Awaitable[Any]:
        streams = drain(proc.stdout, 1), drain(proc.stderr, 2), drain(outcome, 3)  # type: ignore[arg-type]
        return asyncio.gather(*streams, proc.wait())

    try:
        await asyncio.wait_for(asyncio.gather(feed(), finish()), budget.wall_s)
    except TimeoutError:
        stopped = f"wall time limit ({budget.wall_s:g} s) exceeded"
        _kill(proc.pid)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(finish(), KILL_GRACE_S)
    return stopped, b"".join(chunks[1]), b"".join(chunks[2]), b"".join(chunks[3])


async def _reader(fd: int) -> asyncio.StreamReader:
    """An asyncio reader over a pipe's read end (the fd stays the caller's to close)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_OUTCOME_BYTES)
    pipe = os.fdopen(os.dup(fd), "rb", buffering=0)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    return reader


def _outcome(data: bytes) -> dict[str, Any]:
    """The child's outcome object; {} when it wrote none (or garbage)."""
    try:
        value = json.loads(data) if data.startswith(b"{") else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _kill(pid: int) -> None:
    """SIGKILL the child's whole process group (it is the leader of a new session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
