"""Run a flow text on the engine with an in-memory store, for node scenarios."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from studio.flow.spec import load_flow_text
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine, RunResult
from studio.store import MemoryStore

HEADER = "flowstudio: 1\nname: scenario\n"


async def run_flow(
    text: str, inputs: dict[str, Any] | None = None, path: Path | None = None
) -> tuple[RunResult, MemoryStore]:
    """Compile `HEADER + text` (as if saved at `path`) and run it; returns the result and the store."""
    store = MemoryStore()
    plan = compile_flow(load_flow_text(HEADER + text, path=path))
    return await Engine(store).run(plan, inputs or {}), store
