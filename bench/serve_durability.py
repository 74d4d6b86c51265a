"""Serving throughput per durability mode: `flowstudio serve --durability MODE`, modes in turns.

The flow, client and levels are bench/serve.py's (three steps, scripted model, LLM cache off,
every run recorded in SQLite on disk); each round starts one server per mode in turn (sync,
async, exit, sync, ...) so the modes are compared in the same minutes. Medians over the rounds.

Run:  .venv/bin/python bench/serve_durability.py [--rounds 2] [--requests 200]
Prints one JSON object (and a markdown table on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serve as bench_serve

MODES = ("sync", "async", "exit")


def start(db: Path, mode: str) -> bench_serve.Target:
    port = bench_serve.free_port()
    command = [str(bench_serve.FLOWSTUDIO), "serve", str(bench_serve.FLOW), "--port", str(port), "--db", str(db)]
    command += ["--max-concurrency", "64", "--durability", mode]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    bench_serve.wait_ready(f"{url}/healthz", process)
    return bench_serve.Target(f"flowstudio-{mode}", url, "/flows/serve-three/runs", process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    runs: dict[str, list[list[dict[str, Any]]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as name:
        for number in range(args.rounds):
            for mode in MODES:
                target = start(Path(name) / f"{mode}-{number}.db", mode)
                try:
                    runs[mode].append(bench_serve.measure(target, args.requests))
                finally:
                    target.stop()
    servers = {}
    for mode, rounds in runs.items():
        rows = []
        for index, first in enumerate(rounds[0]):
            same = [r[index] for r in rounds]
            rows.append(
                {
                    "concurrency": first["concurrency"],
                    "requests": first["requests"],
                    "errors": sum(r["errors"] for r in same),
                    "rps": round(statistics.median(r["rps"] for r in same), 1),
                    "p50_ms": round(statistics.median(r["p50_ms"] for r in same), 2),
                    "p95_ms": round(statistics.median(r["p95_ms"] for r in same), 2),
                }
            )
        servers[f"flowstudio-{mode}"] = rows
    result = {"rounds": args.rounds, "load_average": os.getloadavg(), "servers": servers}
    print(json.dumps(result, indent=2))
    print(bench_serve.table(result), file=sys.stderr)


if __name__ == "__main__":
    main()
