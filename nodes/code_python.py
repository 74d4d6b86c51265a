"""`code.python`: run user code in an OS sandbox (bubblewrap; no network, no new processes).

The code sees its inputs as variables (and as the dict `inputs`) and sets `result`. The child
(`sandbox_child.py`) runs inside the sandbox built by `sandbox.py` (namespaces, read-only
interpreter, private tmpfs, seccomp) and limits itself before the code starts; this side
enforces wall time and output size and kills the whole process group when either is
exceeded. The node's error names the limit. Without bubblewrap the node refuses to run,
unless the user (never the flow) trusts the code: then the child is a plain process.
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
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from nodes import sandbox
from studio.node import Node, NodeContext, NodeError, TemplateInputs

READ_CHUNK = 65536
KILL_GRACE_S = 5.0
MAX_OUTCOME_BYTES = 64 << 20


class PythonCode(Node):
    """Run a Python snippet in a sandboxed child process."""

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        code: str
        """Python source. Inputs are variables (and the dict `inputs`); assign the output to `result`."""
        cpu_s: int = Field(default=5, ge=1, le=600)
        """CPU seconds the code may use."""
        wall_s: float = Field(default=10.0, gt=0, le=3600)
        """Seconds the code may take in all, waiting included."""
        memory_mb: int = Field(default=256, ge=32, le=65536)
        """Address space of the child process, in MiB."""
        output_kb: int = Field(default=1024, ge=1, le=1048576)
        """Most printed output (stdout and stderr together) and file writes, in KiB."""

    Inputs = TemplateInputs

    class Outputs(BaseModel):
        result: Any
        """The value the code assigned to `result` (JSON data; null when it set none)."""
        stdout: str
        """What the code printed."""

    config: Config

    async def run(self, inputs: TemplateInputs, ctx: NodeContext) -> Outputs:
        c = self.config
        limits = json.dumps({"cpu_s": c.cpu_s, "memory_bytes": c.memory_mb << 20, "output_bytes": c.output_kb << 10})
        payload = json.dumps({"code": c.code, "inputs": inputs.values()}).encode()
        trusted = sandbox.trusted()
        if not trusted and (reason := await asyncio.to_thread(sandbox.check)):
            raise NodeError(f"code.python refused: {reason}", kind="sandbox_unavailable")
        read_end, write_end = os.pipe()
        filter_fd = None if trusted else sandbox.seccomp_fd()
        try:
            with tempfile.TemporaryDirectory(prefix="flowstudio-code-") as work:
                if trusted:
                    args = [sys.executable, "-I", "-S", "-B", str(sandbox.CHILD), limits, str(write_end)]
                    env = {"LC_ALL": "C.UTF-8"}
                else:
                    args, env = sandbox.command(limits, write_end, filter_fd), {}
                proc = await asyncio.create_subprocess_exec(
                    *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE, cwd=work, env=env, start_new_session=True,
                    pass_fds=tuple(fd for fd in (write_end, filter_fd) if fd is not None),
                )  # fmt: skip
                os.close(write_end)
                write_end = -1
                stopped, out, err, text = await self._supervise(proc, payload, read_end)
        finally:
            for fd in (read_end, write_end, filter_fd):
                if fd is not None and fd >= 0:
                    os.close(fd)
        outcome = _outcome(text)
        returncode = proc.returncode
        if not trusted and returncode is not None and returncode > 128:
            returncode = 128 - returncode  # bwrap exits with 128 + the signal that ended the child
        if stopped is None:
            stopped = self._limit_hit(returncode, outcome)
        if stopped is not None:
            raise NodeError(f"code.python stopped: {stopped}", kind="limit")
        if not outcome.get("ok"):
            message = outcome.get("message") or err.decode(errors="replace")[-2000:] or f"exit code {proc.returncode}"
            raise NodeError(f"code.python failed: {message.strip()}", kind="code_error")
        return self.Outputs(result=outcome.get("result"), stdout=out.decode(errors="replace"))

    async def _supervise(
        self, proc: asyncio.subprocess.Process, payload: bytes, outcome_fd: int
    ) -> tuple[str | None, bytes, bytes, bytes]:
        """Feed the payload, collect output and the outcome; the limit that stopped the child, or None.

        Pipes are always read to their end (past the budget, into nothing): asyncio's
        `wait()` returns only once they are closed.
        """
        assert proc.stdin and proc.stdout and proc.stderr
        budget = self.config.output_kb << 10
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
                if total <= budget:
                    chunks[key].append(chunk)
                elif stopped is None:
                    stopped = f"output limit ({self.config.output_kb} KiB) exceeded"
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
            await asyncio.wait_for(asyncio.gather(feed(), finish()), self.config.wall_s)
        except TimeoutError:
            stopped = f"wall time limit ({self.config.wall_s:g} s) exceeded"
            _kill(proc.pid)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(finish(), KILL_GRACE_S)
        return stopped, b"".join(chunks[1]), b"".join(chunks[2]), b"".join(chunks[3])

    def _limit_hit(self, returncode: int | None, outcome: dict[str, Any]) -> str | None:
        """Which limit ended the child, read from its outcome or the signal that killed it."""
        c = self.config
        limit = outcome.get("limit")
        if limit == "memory":
            return f"memory limit ({c.memory_mb} MiB) exceeded"
        if limit == "file size":
            return f"output limit ({c.output_kb} KiB) exceeded (file write)"
        if limit is not None:
            return f"{limit} not allowed in code.python ({outcome.get('message')})"
        if returncode in (-signal.SIGXCPU, -signal.SIGKILL):
            return f"CPU time limit ({c.cpu_s} s) exceeded"
        if returncode == -signal.SIGXFSZ:
            return f"output limit ({c.output_kb} KiB) exceeded (file write)"
        if returncode == -signal.SIGSEGV and not outcome:
            return f"memory limit ({c.memory_mb} MiB) exceeded (the interpreter crashed)"
        return None


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
