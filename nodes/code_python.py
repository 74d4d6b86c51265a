"""`code.python`: run user code in a separate, limited process (no network, no new processes).

The code sees its inputs as variables (and as the dict `inputs`) and sets `result`. The child
(`sandbox_child.py`) runs with a clean environment in an empty temporary directory and
limits itself before the code starts; this side enforces wall time and output size and
kills the whole process group when either is exceeded. The node's error names the limit.
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
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from studio.node import Node, NodeContext, NodeError, TemplateInputs

CHILD = Path(__file__).with_name("sandbox_child.py")
READ_CHUNK = 65536
KILL_GRACE_S = 5.0


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
        limits = {"cpu_s": c.cpu_s, "memory_bytes": c.memory_mb << 20, "output_bytes": c.output_kb << 10}
        payload = json.dumps({"code": c.code, "inputs": inputs.values()}).encode()
        with tempfile.TemporaryDirectory(prefix="flowstudio-code-") as work:
            outcome_path = Path(work) / "outcome.json"
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-I", "-S", str(CHILD), json.dumps(limits), str(outcome_path),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                cwd=work, env={"LC_ALL": "C.UTF-8"}, start_new_session=True,
            )  # fmt: skip
            stopped, out, err = await self._supervise(proc, payload)
            text = outcome_path.read_text(encoding="utf-8") if outcome_path.is_file() else ""
        outcome = json.loads(text) if text.startswith("{") and text.endswith("}") else {}
        if stopped is None:
            stopped = self._limit_hit(proc.returncode, outcome)
        if stopped is not None:
            raise NodeError(f"code.python stopped: {stopped}", kind="limit")
        if not outcome.get("ok"):
            message = outcome.get("message") or err.decode(errors="replace")[-2000:] or f"exit code {proc.returncode}"
            raise NodeError(f"code.python failed: {message.strip()}", kind="code_error")
        return self.Outputs(result=outcome.get("result"), stdout=out.decode(errors="replace"))

    async def _supervise(self, proc: asyncio.subprocess.Process, payload: bytes) -> tuple[str | None, bytes, bytes]:
        """Feed the payload, collect output; the limit that stopped the child, or None.

        Pipes are always read to their end (past the budget, into nothing): asyncio's
        `wait()` returns only once they are closed.
        """
        assert proc.stdin and proc.stdout and proc.stderr
        budget = self.config.output_kb << 10
        chunks: dict[int, list[bytes]] = {1: [], 2: []}
        total, stopped = 0, None

        async def drain(stream: asyncio.StreamReader, key: int) -> None:
            nonlocal total, stopped
            while chunk := await stream.read(READ_CHUNK):
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
            return asyncio.gather(drain(proc.stdout, 1), drain(proc.stderr, 2), proc.wait())  # type: ignore[arg-type]

        try:
            await asyncio.wait_for(asyncio.gather(feed(), finish()), self.config.wall_s)
        except TimeoutError:
            stopped = f"wall time limit ({self.config.wall_s:g} s) exceeded"
            _kill(proc.pid)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(finish(), KILL_GRACE_S)
        return stopped, b"".join(chunks[1]), b"".join(chunks[2])

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


def _kill(pid: int) -> None:
    """SIGKILL the child's whole process group (it is the leader of a new session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
