"""Serving throughput: `flowstudio serve` in each durability mode against Prompt flow's `pf flow serve`.

The flow is three steps (a template, a model answering a fixed reply, a template):
bench/flows/serve-three.yaml on Flowstudio (the scripted model, LLM cache off, every run
recorded in SQLite on disk, `synchronous=FULL`) and bench/flows/serve-promptflow/ on Prompt flow
(three Python tools, nothing recorded). Each server runs in its own process on 127.0.0.1; one
client process (asyncio, one raw keep-alive HTTP/1.1 connection per request in flight: httpx cost
more CPU than either server) sends `wait`-mode POSTs at concurrency 1, 16 and 64 and measures
requests per second and the p50/p95 latency of each request.

The servers are measured in turns, A B C D A B C D ...: each round starts Flowstudio once per
durability mode (`sync`, `async`, `exit`) and `--workers` count (1 and 2: names ending `-2w`) and
Prompt flow once per engine (flask, its default;
`--engines flask,fastapi` adds uvicorn's), so every ratio compares figures taken in the same
minutes. Figures are medians over the rounds; ratios are Flowstudio's over Prompt flow's.

Run:
    bash bench/setup_promptflow.sh              # once: promptflow in bench/.venv-promptflow
    .venv/bin/python bench/serve.py [--rounds 3] [--requests 400] [--no-promptflow]
Prints one JSON object (and a markdown table on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
FLOWSTUDIO = Path(sys.executable).parent / "flowstudio"
FLOW = ROOT / "bench" / "flows" / "serve-three.yaml"
PF_FLOW = ROOT / "bench" / "flows" / "serve-promptflow"
PF = ROOT / "bench" / ".venv-promptflow" / "bin" / "pf"
LEVELS = (1, 16, 64)
EXPECTED = "A SCRIPTED HEADLINE!"
WARM_UP = 200
"""Requests before the first level: imports, caches, connections, and a store past its first
checkpoint (a new SQLite file's write-ahead log grows, and each fsync of a growing file costs more,
until the first checkpoint lets it wrap around), so each level measures the steady state."""


@dataclass
class Target:
    """One server under test: how to call it and how to read its answer."""

    name: str
    url: str
    path: str
    process: subprocess.Popen[bytes]

    def body(self, n: int) -> dict[str, Any]:
        inputs = {"topic": f"topic {n}"}
        return {"inputs": inputs} if self.path.startswith("/flows/") else inputs

    def headline(self, answer: dict[str, Any]) -> str:
        found = answer["outputs"]["headline"] if "outputs" in answer else answer["headline"]
        return str(found)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(url: str, process: subprocess.Popen[bytes], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{url} not ready after {timeout} s")


def start_flowstudio(db: Path, mode: str = "sync", workers: int = 1) -> Target:
    port = free_port()
    command = [str(FLOWSTUDIO), "serve", str(FLOW), "--port", str(port), "--db", str(db), "--max-concurrency", "64"]
    command += ["--durability", mode, "--workers", str(workers)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    wait_ready(f"{url}/healthz", process)
    name = f"flowstudio-{mode}" + (f"-{workers}w" if workers > 1 else "")
    return Target(name, url, "/flows/serve-three/runs", process)


def start_promptflow(engine: str, home: Path) -> Target:
    port = free_port()
    command = [str(PF), "flow", "serve", "--source", str(PF_FLOW), "--port", str(port), "--host", "127.0.0.1"]
    command += ["--skip-open-browser", "--engine", engine]
    env = {
        **os.environ,
        "PF_DISABLE_TRACING": "true",
        "HOME": str(home),
        "PF_HOME_DIRECTORY": str(home / ".promptflow"),
    }
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    wait_ready(f"{url}/health", process)
    return Target(f"promptflow-{engine}", url, "/score", process)


class Connection:
    """One keep-alive HTTP/1.1 connection that sends prepared POSTs and reads their answers: a
    client light enough that the server, not the client, is what a level measures (httpx spent
    more CPU per request than the servers did, and the machine has two cores)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: application/json\r\n"
        self.writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
        answer = await self.reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection") == "close" or lines[0].startswith("HTTP/1.0"):
            self.close()
        return status, answer

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


async def level(target: Target, concurrency: int, total: int) -> dict[str, Any]:
    """`total` requests with `concurrency` in flight; latency of each, throughput of all."""
    latencies: list[float] = []
    samples: list[str] = []
    errors = 0
    counter = iter(range(total))
    url = httpx.URL(target.url)
    host, port = url.host, url.port or 80

    async def worker() -> None:
        nonlocal errors
        connection = Connection(host, port)
        try:
            for n in counter:
                body = json.dumps(target.body(n)).encode()
                start = time.perf_counter()
                problem = None
                try:
                    status, answer = await connection.post(target.path, body)
                    if status != 200 or target.headline(json.loads(answer)) != EXPECTED:
                        problem = f"{status}: {answer[:200]!r}"
                except (OSError, asyncio.IncompleteReadError, KeyError, ValueError) as err:
                    problem = f"{type(err).__name__}: {err}"
                    connection.close()
                latencies.append(time.perf_counter() - start)
                if problem is not None:
                    errors += 1
                    samples.append(problem)
        finally:
            connection.close()

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - began
    latencies.sort()
    return {
        "concurrency": concurrency,
        "requests": total,
        "errors": errors,
        "rps": round(total / wall, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))] * 1000, 2),
        "error_samples": samples[:3],
    }


def measure(target: Target, requests: int) -> list[dict[str, Any]]:
    asyncio.run(level(target, 4, WARM_UP))
    return [asyncio.run(level(target, c, max(requests // 2, 50) if c == 1 else requests)) for c in LEVELS]


def ratios(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "concurrency": a["concurrency"],
            "rps_ratio": round(a["rps"] / b["rps"], 2),
            "p50_ratio": round(a["p50_ms"] / b["p50_ms"], 2),
            "p95_ratio": round(a["p95_ms"] / b["p95_ms"], 2),
        }
        for a, b in zip(ours, theirs, strict=True)
    ]


def medians(rounds: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per level: the median of each figure over the rounds, errors summed."""
    rows = []
    for index, first in enumerate(rounds[0]):
        same = [measured[index] for measured in rounds]
        rows.append(
            {
                "concurrency": first["concurrency"],
                "requests": first["requests"],
                "errors": sum(r["errors"] for r in same),
                "rps": round(statistics.median(r["rps"] for r in same), 1),
                "p50_ms": round(statistics.median(r["p50_ms"] for r in same), 2),
                "p95_ms": round(statistics.median(r["p95_ms"] for r in same), 2),
                "rps_each_round": [r["rps"] for r in same],
            }
        )
    return rows


def promptflow_version() -> str | None:
    python = PF.parent / "python"
    code = "import importlib.metadata as m; print(m.version('promptflow'))"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    return done.stdout.strip() or None


def table(result: dict[str, Any]) -> str:
    lines = ["| server | concurrency | requests/s | p50 ms | p95 ms | errors |", "|---|---|---|---|---|---|"]
    for name, rows in result["servers"].items():
        for row in rows:
            lines.append(
                f"| {name} | {row['concurrency']} | {row['rps']} | {row['p50_ms']} | {row['p95_ms']} | {row['errors']} |"
            )
    return "\n".join(lines)


def add_db_dir(parser: argparse.ArgumentParser) -> None:
    """`--db-dir`: where the stores go (also `bench/serve_inprocess.py`'s)."""
    parser.add_argument(
        "--db-dir", type=Path, help="Where the stores go (default: a temporary folder; /dev/shm: no disk)."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="Turns of every server (figures are medians).")
    parser.add_argument("--requests", type=int, default=400, help="Requests per level (half at concurrency 1).")
    parser.add_argument("--no-promptflow", action="store_true", help="Measure Flowstudio only.")
    parser.add_argument("--engines", default="flask", help="Prompt flow engines to measure (flask,fastapi).")
    parser.add_argument("--modes", default="sync,async,exit", help="Flowstudio durability modes to measure.")
    parser.add_argument(
        "--workers", default="1,2", help="Flowstudio `--workers` counts to measure (each with every mode)."
    )
    add_db_dir(parser)
    args = parser.parse_args()
    engines = [] if args.no_promptflow else args.engines.split(",")
    if engines and not PF.exists():
        sys.exit("bench/.venv-promptflow is missing: bash bench/setup_promptflow.sh (or --no-promptflow)")
    runs: dict[str, list[list[dict[str, Any]]]] = {}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="serve-bench-", dir=args.db_dir) as tmp:
        for number in range(args.rounds):
            for workers in (int(count) for count in args.workers.split(",")):
                for mode in args.modes.split(","):
                    target = start_flowstudio(Path(tmp) / f"{mode}-{workers}-{number}.db", mode, workers)
                    _measure_into(runs, target, args.requests)
            for engine in engines:
                _measure_into(runs, start_promptflow(engine, Path(tmp)), args.requests)
            loads.append(os.getloadavg()[0])
    servers = {name: medians(rounds) for name, rounds in runs.items()}
    result: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "flow": "template -> scripted model -> template",
        "rounds": args.rounds,
        "stores_in": str(Path(tmp).parent),
        "load_average": [round(load, 1) for load in loads],
        "servers": servers,
    }
    if engines:
        result["promptflow"] = promptflow_version()
        result["ratios"] = {
            f"{ours} / {theirs}": ratios(servers[ours], servers[theirs])
            for ours in servers
            if ours.startswith("flowstudio")
            for theirs in servers
            if theirs.startswith("promptflow")
        }
    print(json.dumps(result, indent=2))
    print(table(result), file=sys.stderr)


def _measure_into(runs: dict[str, list[list[dict[str, Any]]]], target: Target, requests: int) -> None:
    try:
        runs.setdefault(target.name, []).append(measure(target, requests))
    finally:
        target.stop()


if __name__ == "__main__":
    main()
