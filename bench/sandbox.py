"""Per-call cost of `code.python`: the bubblewrap sandbox against the trusted child process.

Run:  .venv/bin/python bench/sandbox.py [--calls 30]
Runs a one-node flow (`result = n + 1`) through the engine, `--calls` times each way after
one warm-up, sequentially; prints median and best milliseconds per call and the ratio as JSON.
"before" is the trusted path (FLOWSTUDIO_TRUST_CODE=1: a plain `python -I -S` child with the
audit hook and rlimits, which is what every call cost before the sandbox); "after" is the
default, sandboxed path.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time

from studio.flow.spec import load_flow_text
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine
from studio.store import MemoryStore

FLOW = """\
flowstudio: 1
name: sandbox-bench
inputs: {n: {type: int, default: 41}}
outputs: {result: $code.result}
nodes:
  code: {type: code.python, inputs: {n: $inputs.n}, config: {code: "result = n + 1"}}
"""


async def _calls(count: int) -> list[float]:
    plan = compile_flow(load_flow_text(FLOW))
    engine = Engine(MemoryStore())
    seconds = []
    for number in range(count + 1):
        start = time.perf_counter()
        result = await engine.run(plan, {})
        if result.outputs != {"result": 42}:
            raise SystemExit(f"code.python failed: {result.error}")
        if number:  # the first call is the warm-up (and the sandbox probe)
            seconds.append(time.perf_counter() - start)
    return seconds


def measure(trusted: bool, count: int) -> list[float]:
    if trusted:
        os.environ["FLOWSTUDIO_TRUST_CODE"] = "1"
    else:
        os.environ.pop("FLOWSTUDIO_TRUST_CODE", None)
    return asyncio.run(_calls(count))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30)
    count = parser.parse_args().calls
    report = {}
    for label, trusted in (("before_trusted_child", True), ("after_bubblewrap", False)):
        seconds = measure(trusted, count)
        report[label] = {
            "median_ms": round(statistics.median(seconds) * 1000, 1),
            "best_ms": round(min(seconds) * 1000, 1),
        }
    before, after = report["before_trusted_child"], report["after_bubblewrap"]
    report["ratio_median"] = round(after["median_ms"] / before["median_ms"], 2)
    report["ratio_best"] = round(after["best_ms"] / before["best_ms"], 2)
    report["calls"] = count
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
