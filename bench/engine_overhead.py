"""Engine overhead of flowstudio, measured in the same run as LangGraph's.

Cases (no-op nodes, in-memory store, like LangGraph without a checkpointer):
  * chain_1000        - 1000 no-op nodes in a chain
  * fanout_100        - start -> 100 parallel no-op nodes -> join (control.merge)
  * fanout_100_sleep  - 100 parallel llm.generate nodes on a scripted model with delay_s 0.2
Also the chain with a store that keeps no steps (the engine's own cost: scheduling, inputs,
the node attempt, without the step record's copy), and on the SQLite store (synchronous=FULL, one
transaction per step), for scale.

Run:
    bash bench/setup_langgraph.sh            # once: LangGraph in its own venv
    .venv/bin/python bench/engine_overhead.py [--no-langgraph]
Prints one JSON object, with ratios (ours / LangGraph) where LangGraph ran. LangGraph runs
before and after ours and keeps its better figure, so drifting load never favours us.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from studio.flow.spec import load_flow_text
from studio.node import Node, NodeContext
from studio.runtime import registry
from studio.runtime.compiler import Plan, compile_flow
from studio.runtime.engine import Engine
from studio.store import MemoryStore, SQLiteStore
from studio.store.base import CallRecord, StepRecord

ROOT = Path(__file__).resolve().parent.parent
LANGGRAPH_PYTHON = ROOT / "bench" / ".venv-langgraph" / "bin" / "python"
CHAIN, FANOUT, SLEEP_S = 1000, 100, 0.2


class Noop(Node):
    """Pass a value through unchanged."""

    class Config(BaseModel):
        pass

    class Inputs(BaseModel):
        x: Any = None

    class Outputs(BaseModel):
        x: Any = None

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        return self.Outputs(x=inputs.x)


def chain_flow(n: int) -> str:
    nodes = ["  n0: {type: bench.noop, inputs: {x: $inputs.x}}"]
    nodes += [f"  n{i}: {{type: bench.noop, inputs: {{x: $n{i - 1}.x}}}}" for i in range(1, n)]
    return (
        f"flowstudio: 1\nname: chain\ninputs: {{x: {{type: int}}}}\noutputs: {{x: $n{n - 1}.x}}\nnodes:\n"
        + "\n".join(nodes)
    )


def fanout_flow(n: int) -> str:
    nodes = ["  start: {type: bench.noop, inputs: {x: $inputs.x}}"]
    nodes += [f"  b{i}: {{type: bench.noop, inputs: {{x: $start.x}}}}" for i in range(n)]
    options = ", ".join(f"$b{i}.x" for i in range(n))
    nodes.append(f"  join: {{type: control.merge, inputs: {{options: [{options}]}}}}")
    return "flowstudio: 1\nname: fan\ninputs: {x: {type: int}}\noutputs: {x: $join.value}\nnodes:\n" + "\n".join(nodes)


def sleep_flow(n: int) -> str:
    model = f"models:\n  default: {{model: scripted, script: [{{reply: ok, delay_s: {SLEEP_S}}}]}}\n"
    nodes = [
        f"  b{i}: {{type: llm.generate, inputs: {{x: $inputs.x}}, config: {{prompt: '{{{{ x }}}} {i}'}}}}"
        for i in range(n)
    ]
    return f"flowstudio: 1\nname: sleep\ninputs: {{x: {{type: int}}}}\n{model}nodes:\n" + "\n".join(nodes)


def compiled(text: str) -> tuple[Plan, float]:
    start = time.perf_counter()
    plan = compile_flow(load_flow_text(text))
    return plan, time.perf_counter() - start


class StepsDropped(MemoryStore):
    """A memory store that keeps runs but drops every step: what the engine costs apart from the store."""

    def finish_step(self, run_id: str, step: StepRecord, calls: list[CallRecord]) -> None:
        return None


async def best_of(runs: int, call: Callable[[], Awaitable[Any]]) -> float:
    await call()
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        result = await call()
        best = min(best, time.perf_counter() - start)
        assert result.status == "succeeded", result.error
    return best


async def measure() -> dict[str, Any]:
    registry.register("bench.noop", Noop)
    out: dict[str, Any] = {"python_version": platform.python_version()}
    for name, text, nodes, runs in [
        ("chain_1000", chain_flow(CHAIN), CHAIN, 5),
        ("fanout_100", fanout_flow(FANOUT), FANOUT + 2, 5),
    ]:
        plan, compile_s = compiled(text)
        total = await best_of(runs, lambda plan=plan: Engine(MemoryStore()).run(plan, {"x": 1}))  # type: ignore[misc]
        out[name] = {
            "nodes": nodes,
            "total_s": round(total, 6),
            "per_node_ms": round(total / nodes * 1e3, 4),
            "compile_s": round(compile_s, 4),
        }
    plan, _ = compiled(chain_flow(CHAIN))
    total = await best_of(5, lambda: Engine(StepsDropped()).run(plan, {"x": 1}))
    out["chain_1000_no_steps"] = {"total_s": round(total, 6), "per_node_ms": round(total / CHAIN * 1e3, 4)}
    plan, compile_s = compiled(sleep_flow(FANOUT))
    wall = await best_of(3, lambda: Engine(MemoryStore()).run(plan, {"x": 1}))
    out["fanout_100_sleep"] = {
        "nodes": FANOUT,
        "sleep_s": SLEEP_S,
        "wall_s": round(wall, 4),
        "overhead_s": round(wall - SLEEP_S, 4),
    }
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "bench.db")
        plan, _ = compiled(chain_flow(CHAIN))
        total = await best_of(3, lambda: Engine(store).run(plan, {"x": 1}))
        out["chain_1000_sqlite"] = {"total_s": round(total, 4), "per_node_ms": round(total / CHAIN * 1e3, 4)}
        store.close()
    return out


def langgraph() -> dict[str, Any] | None:
    if not LANGGRAPH_PYTHON.exists():
        return None
    done = subprocess.run(
        [str(LANGGRAPH_PYTHON), str(ROOT / "bench" / "langgraph_baseline.py")],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _best(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """LangGraph runs before and after ours; keep its better figure per case (load drifts)."""
    best = dict(first)
    for case in ("chain_1000", "fanout_100"):
        best[case] = min(first[case], second[case], key=lambda c: c["per_node_ms"])
    best["fanout_100_sleep"] = min(first["fanout_100_sleep"], second["fanout_100_sleep"], key=lambda c: c["wall_s"])
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-langgraph", action="store_true", help="Skip the LangGraph side.")
    args = parser.parse_args()
    before = None if args.no_langgraph else langgraph()
    ours = asyncio.run(measure())
    after = None if args.no_langgraph else langgraph()
    theirs = _best(before, after) if before and after else None
    report: dict[str, Any] = {"flowstudio": ours, "langgraph": theirs}
    if theirs:
        report["ratio_ours_over_langgraph"] = {
            "chain_1000_per_node": round(ours["chain_1000"]["per_node_ms"] / theirs["chain_1000"]["per_node_ms"], 3),
            "chain_1000_no_steps_per_node": round(
                ours["chain_1000_no_steps"]["per_node_ms"] / theirs["chain_1000"]["per_node_ms"], 3
            ),
            "fanout_100_per_node": round(ours["fanout_100"]["per_node_ms"] / theirs["fanout_100"]["per_node_ms"], 3),
            "fanout_100_sleep_wall": round(
                ours["fanout_100_sleep"]["wall_s"] / theirs["fanout_100_sleep"]["wall_s"], 3
            ),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
