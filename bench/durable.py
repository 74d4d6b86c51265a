"""Durable runs: checkpoint cost per step in each durability mode (sync's against LangGraph's SqliteSaver, same run),
resume time for a 1000-step run, and a cached re-run of an example flow.

Run:
    bash bench/setup_langgraph.sh               # once
    .venv/bin/python bench/durable.py [--no-langgraph]
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

from studio.flow.spec import DURABILITIES, Durability, load_flow_text
from studio.node import NodeContext, NodeError
from studio.runtime import registry, runner
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine, RunOptions
from studio.store import MemoryStore, SQLiteStore

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from engine_overhead import Noop, chain_flow  # noqa: E402

LANGGRAPH_PYTHON = ROOT / "bench" / ".venv-langgraph" / "bin" / "python"
STEPS = 300
RESUME_STEPS = 1000


class FailOnce(Noop):
    """Fails the first time it runs in this process, then passes its input through."""

    failed = False

    async def run(self, inputs: Noop.Inputs, ctx: NodeContext) -> Noop.Outputs:
        if not FailOnce.failed:
            FailOnce.failed = True
            raise NodeError("planned failure", kind="server")
        return await super().run(inputs, ctx)


async def checkpoint_cost(tmp: Path, rounds: int = 7) -> dict[str, float]:
    """Per step of a chain: the memory store, and SQLite in each durability mode, measured in
    turns (memory, sync, async, exit, memory, ...) so every figure comes from the same minutes;
    medians over `rounds`."""
    plan = compile_flow(load_flow_text(chain_flow(STEPS)))
    stores: dict[str, Any] = {"memory": MemoryStore(), **{m: SQLiteStore(tmp / f"ckpt-{m}.db") for m in DURABILITIES}}
    times: dict[str, list[float]] = {name: [] for name in stores}
    for _ in range(rounds):
        for name, store in stores.items():
            mode = "sync" if name == "memory" else cast(Durability, name)
            times[name].append(await _timed(Engine(store), plan, mode))
    for store in stores.values():
        store.close()
    memory = statistics.median(times["memory"])
    figures = {"memory_ms_per_step": round(memory / STEPS * 1e3, 4)}
    for mode in DURABILITIES:
        sqlite = statistics.median(times[mode])
        suffix = "" if mode == "sync" else f"_{mode}"
        figures[f"sqlite_ms_per_step{suffix}"] = round(sqlite / STEPS * 1e3, 4)
        figures[f"checkpoint_ms_per_step{suffix}"] = round((sqlite - memory) / STEPS * 1e3, 4)
    return figures


async def _timed(engine: Engine, plan: Any, durability: Durability = "sync") -> float:
    start = time.perf_counter()
    result = await engine.run(plan, {"x": 1}, options=RunOptions(durability=durability))
    assert result.status == "succeeded"
    return time.perf_counter() - start


async def resume_time(tmp: Path) -> dict[str, float]:
    text = chain_flow(RESUME_STEPS).replace(
        f"n{RESUME_STEPS - 1}: {{type: bench.noop", f"n{RESUME_STEPS - 1}: {{type: bench.fail_once"
    )
    plan = compile_flow(load_flow_text(text))
    store = SQLiteStore(tmp / "resume.db")
    engine = Engine(store)
    failed = await engine.run(plan, {"x": 1})
    assert failed.status == "failed"
    start = time.perf_counter()
    resumed = await runner.resume_on(engine, failed.run_id)
    seconds = time.perf_counter() - start
    assert resumed.status == "succeeded" and len(resumed.steps) == 1
    store.close()
    return {"steps_done_before": RESUME_STEPS - 1, "resume_s": round(seconds, 4)}


def cached_rerun(tmp: Path) -> dict[str, Any]:
    flowstudio = str(Path(sys.executable).parent / "flowstudio")
    command = [
        flowstudio,
        "run",
        str(ROOT / "flows" / "ticket-triage.yaml"),
        "-i",
        "ticket=I was charged twice",
        "--json",
    ]
    env = {"FLOWSTUDIO_DB": str(tmp / "cache.db"), "PATH": "/usr/bin:/bin"}
    figures: dict[str, Any] = {}
    for label in ("first", "second"):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
        run_id = json.loads(done.stdout)["run_id"]
        figures[f"{label}_s"] = round(time.perf_counter() - start, 3)
        store = SQLiteStore(tmp / "cache.db")
        calls = store.calls(run_id)
        figures[f"{label}_model_calls"] = sum(1 for c in calls if not c.cache_hit)
        figures[f"{label}_cache_hits"] = sum(1 for c in calls if c.cache_hit)
        store.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-langgraph", action="store_true")
    args = parser.parse_args()
    registry.register("bench.noop", Noop)
    registry.register("bench.fail_once", FailOnce)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        report: dict[str, Any] = {
            "checkpoint": asyncio.run(checkpoint_cost(tmp)),
            "resume_1000": asyncio.run(resume_time(tmp)),
            "cached_rerun_ticket_triage": cached_rerun(tmp),
        }
    if not args.no_langgraph and LANGGRAPH_PYTHON.exists():
        done = subprocess.run(
            [str(LANGGRAPH_PYTHON), str(ROOT / "bench" / "langgraph_checkpoint.py")],
            capture_output=True,
            text=True,
            check=True,
        )
        theirs = json.loads(done.stdout)
        report["langgraph_sqlite_saver"] = theirs
        report["ratio_checkpoint_ours_over_langgraph"] = round(
            report["checkpoint"]["checkpoint_ms_per_step"] / theirs["checkpoint_ms_per_step"], 3
        )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
