"""`control.map` throughput: 1,000 items through a one-call scripted sub-flow (10 ms latency)
at concurrency 1, 16 and 128, on the in-memory and the SQLite store; and the peak memory of
a map over 100,000 items (no model, in-memory store).

Run:  .venv/bin/python bench/map_throughput.py [--items 1000] [--big 100000]
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from studio.flow.spec import load_flow_text
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine, RunOptions
from studio.store import MemoryStore, SQLiteStore
from studio.store.base import Store

CALL = """
        models:
          default: {model: scripted, script: [{reply: ok, delay_s: 0.01}]}
        nodes:
          t: {type: llm.generate, inputs: {i: $inputs.item}, config: {prompt: "item {{ i }}"}}"""
TEMPLATE = """
        nodes:
          t: {type: text.template, inputs: {i: $inputs.item}, config: {template: "{{ i }}"}}"""


def flow(concurrency: int, body: str) -> str:
    return f"""flowstudio: 1
name: map-bench
inputs: {{xs: {{type: "list[int]"}}}}
outputs: {{n: $m.results}}
nodes:
  m:
    type: control.map
    inputs: {{items: $inputs.xs}}
    config:
      concurrency: {concurrency}
      flow:
        flowstudio: 1
        name: one
        inputs: {{item: {{type: int}}}}
        outputs: {{v: $t.text}}{body}
"""


async def items_per_second(store: Store, items: int, concurrency: int) -> float:
    plan = compile_flow(load_flow_text(flow(concurrency, CALL)))
    start = time.perf_counter()
    result = await Engine(store).run(plan, {"xs": list(range(items))}, options=RunOptions(cache=False))
    assert result.status == "succeeded", result.error
    return round(items / (time.perf_counter() - start), 1)


async def peak_memory(items: int) -> dict[str, float]:
    plan = compile_flow(load_flow_text(flow(16, TEMPLATE)))
    tracemalloc.start()
    start = time.perf_counter()
    result = await Engine(MemoryStore()).run(plan, {"xs": list(range(items))})
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert result.status == "succeeded" and result.outputs is not None
    assert [r["v"] for r in result.outputs["n"][:3]] == ["0", "1", "2"]
    return {
        "items": items,
        "seconds": round(seconds, 1),
        "peak_mb": round(peak / 1e6, 1),
        "bytes_per_item": round(peak / items),
    }


async def measure(items: int, big: int) -> dict[str, Any]:
    report: dict[str, Any] = {"items": items, "model_latency_s": 0.01, "items_per_s": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for concurrency in (1, 16, 128):
            sqlite = SQLiteStore(Path(tmp) / f"c{concurrency}.db")
            report["items_per_s"][str(concurrency)] = {
                "memory_store": await items_per_second(MemoryStore(), items, concurrency),
                "sqlite_store": await items_per_second(sqlite, items, concurrency),
            }
            sqlite.close()
    report["big_map"] = await peak_memory(big)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--big", type=int, default=100_000)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.items, args.big)), indent=2))


if __name__ == "__main__":
    main()
