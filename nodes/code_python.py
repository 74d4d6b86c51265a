"""`code.python`: run user code in an OS sandbox (bubblewrap; no network, no new processes).

The code sees its inputs as variables (and as the dict `inputs`) and sets `result`. The child
(`sandbox_child.py`) runs inside the sandbox built by `sandbox.py` (namespaces, read-only
interpreter, private tmpfs, seccomp) and limits itself before the code starts; this side
(`sandbox_process.py`) enforces wall time and output size and kills the whole process group
when either is exceeded. The node's error names the limit. Without bubblewrap the node refuses to run,
unless the user (never the flow) trusts the code: then the child is a plain process.
"""

from __future__ import annotations

import asyncio
import json
import signal
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from nodes import sandbox
from nodes.sandbox_process import Budget, run_child
from studio.node import Node, NodeContext, NodeError, Role, TemplateInputs


class PythonCode(Node):
    """Run a Python snippet in a sandboxed child process."""

    roles: ClassVar[frozenset[Role]] = frozenset({"python_code"})

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
        trusted = sandbox.trusted()
        if not trusted and (reason := await asyncio.to_thread(sandbox.check)):
            raise NodeError(f"code.python refused: {reason}", kind="sandbox_unavailable")
        done = await run_child(payload, limits, Budget(c.wall_s, c.output_kb), trusted=trusted)
        outcome = done.outcome
        stopped = done.stopped if done.stopped is not None else self._limit_hit(done.returncode, outcome)
        if stopped is not None:
            raise NodeError(f"code.python stopped: {stopped}", kind="limit")
        if not outcome.get("ok"):
            message = (
                outcome.get("message") or done.stderr.decode(errors="replace")[-2000:] or f"exit code {done.exit_code}"
            )
            raise NodeError(f"code.python failed: {message.strip()}", kind="code_error")
        return self.Outputs(result=outcome.get("result"), stdout=done.stdout.decode(errors="replace"))

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
