"""The same batch on the local executor and on Ray, and a repeated Ray batch served from the cache.

A three-node scripted flow (text.template -> llm.generate with 20 ms of model latency ->
text.template), N examples (default 200), concurrency 8, on one SQLite store:
  * local  - the local executor (asyncio tasks in this process), cache off;
  * ray    - a local Ray runtime with 2 worker CPUs (or, with --address, a running cluster), cache off;
  * cached - the Ray batch again, cache on, twice: the first pays for every call and writes the
             replies through the driver; the second must make 0 model calls.
Prints one JSON object: examples/s for each, their ratio, and the model calls of the cached runs.

Run (from the repository root):
    .venv/bin/python bench/ray_batch.py [--examples 200] [--cpus 2]
On a 2-node local cluster (a head and a worker node, one CPU each; stop both with `ray stop`):
    .venv/bin/ray start --head --node-ip-address=127.0.0.1 --port=6390 --num-cpus=1 --include-dashboard=false
    .venv/bin/ray start --address=127.0.0.1:6390 --node-ip-address=127.0.0.1 --num-cpus=1
    .venv/bin/python bench/ray_batch.py --address 127.0.0.1:6390
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from studio.evaluate.batch import BatchOptions, batch  # noqa: E402
from studio.store import SQLiteStore  # noqa: E402

FLOW = """flowstudio: 1
name: bench-ray
inputs: {question: {type: str}}
outputs: {answer: $clean.text}
models:
  default: {model: scripted, script: [{reply: " forty-two ", delay_s: 0.02}]}
nodes:
  ask: {type: text.template, inputs: {question: $inputs.question}, config: {template: "Answer briefly: {{ question }}"}}
  answer: {type: llm.generate, inputs: {request: $ask.text}, config: {prompt: "{{ request }}"}}
  clean: {type: text.template, inputs: {text: $answer.text}, config: {template: "{{ text | trim }}"}}
"""


def _model_calls(db: Path, experiment_id: str) -> int:
    with sqlite3.connect(db) as conn:
        sql = "SELECT COUNT(*) FROM llm_calls JOIN runs USING (run_id) WHERE experiment_id = ? AND cache_hit = 0"
        return int(conn.execute(sql, (experiment_id,)).fetchone()[0])


async def _timed(options: BatchOptions, store: SQLiteStore) -> tuple[float, str]:
    start = time.perf_counter()
    result = await batch(options, store)
    return time.perf_counter() - start, result.experiment_id


async def measure(folder: Path, examples: int) -> dict[str, Any]:
    flow, data, db = folder / "flow.yaml", folder / "data.jsonl", folder / "ray.db"
    flow.write_text(FLOW)
    data.write_text("".join(json.dumps({"question": f"What is {i} plus 1?"}) + "\n" for i in range(examples)))
    store = SQLiteStore(db)
    base = {"flow": str(flow), "data": str(data), "concurrency": 8}
    t_local, _ = await _timed(BatchOptions(**base, cache=False), store)
    t_ray, _ = await _timed(BatchOptions(**base, cache=False, executor="ray"), store)
    t_first, first = await _timed(BatchOptions(**base, cache=True, executor="ray"), store)
    t_again, again = await _timed(BatchOptions(**base, cache=True, executor="ray"), store)
    store.close()
    return {
        "examples": examples,
        "local_examples_per_s": round(examples / t_local, 1),
        "ray_examples_per_s": round(examples / t_ray, 1),
        "ray_over_local": round(t_local / t_ray, 2),
        "cached_first_model_calls": _model_calls(db, first),
        "cached_repeat_model_calls": _model_calls(db, again),
        "cached_first_examples_per_s": round(examples / t_first, 1),
        "cached_repeat_examples_per_s": round(examples / t_again, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--cpus", type=int, default=2, help="Worker CPUs of the local Ray runtime.")
    parser.add_argument("--address", help="A running Ray cluster to join instead (host:port).")
    args = parser.parse_args()
    import ray

    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    nodes = sum(node["Alive"] for node in ray.nodes())
    try:
        with tempfile.TemporaryDirectory() as tmp:
            report = {
                "date": dt.date.today().isoformat(),
                "cpus": os.cpu_count(),
                "ray_nodes": nodes,
                "ray_worker_cpus": int(ray.cluster_resources().get("CPU", 0)),
                "load_average_before": [round(x, 2) for x in os.getloadavg()],
                **asyncio.run(measure(Path(tmp), args.examples)),
                "load_average_after": [round(x, 2) for x in os.getloadavg()],
            }
    finally:
        ray.shutdown()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
