"""Serving throughput: `flowstudio serve` against Prompt flow's `pf flow serve`, same run.

The flow is three steps (a template, a model answering a fixed reply, a template):
bench/flows/serve-three.yaml on Flowstudio (the scripted model, LLM cache off, every run
recorded in SQLite: on disk, and again with the store in /dev/shm) and bench/flows/serve-promptflow/ on Prompt flow (three Python tools,
nothing recorded). Each server runs in its own process on 127.0.0.1; one client process
(httpx, asyncio) sends POSTs at concurrency 1, 16 and 64 and measures requests per second
and the p50/p95 latency of each request. Prompt flow is measured with its default engine
(flask) and with `--engine fastapi`.

Run:
    bash bench/setup_promptflow.sh              # once: promptflow in bench/.venv-promptflow
    .venv/bin/python bench/serve.py [--requests 400] [--no-promptflow]
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
SHM = Path("/dev/shm")
"""Flowstudio is measured twice: its store on disk (every step fsynced: the real figure) and in
RAM (fsync is free there), which separates the disk's share from the server's own."""
EXPECTED = "A SCRIPTED HEADLINE!"


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


def start_flowstudio(db: Path, name: str = "flowstudio") -> Target:
    port = free_port()
    command = [str(FLOWSTUDIO), "serve", str(FLOW), "--port", str(port), "--db", str(db), "--max-concurrency", "64"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    wait_ready(f"{url}/healthz", process)
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


async def level(target: Target, concurrency: int, total: int) -> dict[str, Any]:
    """`total` requests with `concurrency` in flight; latency of each, throughput of all."""
    latencies: list[float] = []
    samples: list[str] = []
    errors = 0
    counter = iter(range(total))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=target.url, timeout=120, limits=limits) as client:

        async def worker() -> None:
            nonlocal errors
            for n in counter:
                start = time.perf_counter()
                problem = None
                try:
                    answer = await client.post(target.path, json=target.body(n))
                    if answer.status_code != 200 or target.headline(answer.json()) != EXPECTED:
                        problem = f"{answer.status_code}: {answer.text[:200]}"
                except (httpx.HTTPError, KeyError, ValueError) as err:
                    problem = f"{type(err).__name__}: {err}"
                latencies.append(time.perf_counter() - start)
                if problem is not None:
                    errors += 1
                    samples.append(problem)

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
    asyncio.run(level(target, 4, 40))  # warm-up: imports, caches, connections
    return [asyncio.run(level(target, c, max(requests // 4, 50) if c == 1 else requests)) for c in LEVELS]


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400, help="Requests per level (a quarter at concurrency 1).")
    parser.add_argument("--no-promptflow", action="store_true", help="Measure Flowstudio only.")
    parser.add_argument("--engines", default="flask,fastapi", help="Prompt flow engines to measure.")
    args = parser.parse_args()
    result: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "flow": "template -> scripted model -> template",
        "servers": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        target = start_flowstudio(Path(tmp) / "runs.db")
        try:
            result["servers"]["flowstudio"] = measure(target, args.requests)
        finally:
            target.stop()
        if SHM.is_dir():
            with tempfile.TemporaryDirectory(dir=SHM) as memory:
                target = start_flowstudio(Path(memory) / "runs.db", "flowstudio-store-in-ram")
                try:
                    result["servers"][target.name] = measure(target, args.requests)
                finally:
                    target.stop()
        if not args.no_promptflow:
            if not PF.exists():
                sys.exit("bench/.venv-promptflow is missing: bash bench/setup_promptflow.sh (or --no-promptflow)")
            result["promptflow"] = promptflow_version()
            for engine in args.engines.split(","):
                target = start_promptflow(engine, Path(tmp))
                try:
                    result["servers"][target.name] = measure(target, args.requests)
                finally:
                    target.stop()
                result[f"ratio_vs_{target.name}"] = ratios(
                    result["servers"]["flowstudio"], result["servers"][target.name]
                )
    print(json.dumps(result, indent=2))
    print(table(result), file=sys.stderr)


if __name__ == "__main__":
    main()
