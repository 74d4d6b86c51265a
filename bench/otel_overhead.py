"""What OpenTelemetry export costs a run, per step.

A chain of no-op nodes runs on the in-memory store three ways: no hook; the OTLP exporter
sending to a live collector (a small HTTP sink on 127.0.0.1 that answers 200, so spans are
really encoded and posted by the batch processor's thread); and a collector that is down
(a closed port). Each way runs REPEAT times, interleaved in rotating order, and keeps its best time; the
figure is the difference from no hook, per step. Closing the exporter (flushing what is
queued) is timed apart, since it happens once per process, after the run. The hook's own time
is added up too: in the run's thread (queueing the records) and in its worker thread (building
the spans), which is where the cost goes; and the process's CPU time per way (all threads, the
close included), which a loaded machine disturbs far less than wall-clock time.

Run:
    .venv/bin/python bench/otel_overhead.py [--steps 500] [--repeat 5]
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.engine_overhead import Noop, chain_flow  # noqa: E402
from studio.flow.spec import load_flow_text  # noqa: E402
from studio.runtime import registry  # noqa: E402
from studio.runtime.compiler import Plan, compile_flow  # noqa: E402
from studio.runtime.engine import Engine  # noqa: E402
from studio.store import MemoryStore  # noqa: E402
from studio.telemetry.hook import OtelHook  # noqa: E402


class Sink(BaseHTTPRequestHandler):
    """An OTLP/HTTP collector that keeps nothing."""

    received = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Sink.received += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


class TimedHook(OtelHook):
    """The exporter hook, adding up the time spent in the run's thread and in its own."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.in_run_s = 0.0
        self.in_worker_s = 0.0

    def __call__(self, *, event: str, **details: Any) -> None:
        start = time.perf_counter()
        super().__call__(event=event, **details)
        self.in_run_s += time.perf_counter() - start

    def _handle(self, event: str, details: dict[str, Any]) -> None:
        start = time.perf_counter()
        super()._handle(event, details)
        self.in_worker_s += time.perf_counter() - start


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def timed(plan: Plan, url: str | None) -> tuple[float, float, int, float, float, float]:
    """Seconds of the run, to close the exporter, steps, seconds in the hook (run's thread, worker),
    and the process's CPU seconds for the run and the close together (every thread)."""
    hook = TimedHook(url) if url else None
    engine = Engine(MemoryStore(), hooks=[hook] if hook else [])
    gc.collect()  # the previous way's garbage is not this run's cost
    cpu = time.process_time()
    start = time.perf_counter()
    result = await engine.run(plan, {"x": 1})
    seconds = time.perf_counter() - start
    assert result.status == "succeeded", result.error
    close_start = time.perf_counter()
    if hook:
        hook.close()
    closing = time.perf_counter() - close_start
    cpu = time.process_time() - cpu
    in_run, in_worker = (hook.in_run_s, hook.in_worker_s) if hook else (0.0, 0.0)
    return seconds, closing, len(result.steps), in_run, in_worker, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    registry.register("bench.noop", Noop)
    plan = compile_flow(load_flow_text(chain_flow(args.steps)))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    ways = {
        "none": None,
        "collector_up": f"http://127.0.0.1:{server.server_address[1]}/v1/traces",
        "collector_down": f"http://127.0.0.1:{closed_port()}/v1/traces",
    }
    best: dict[str, tuple[float, float]] = {}
    hook_s: dict[str, tuple[float, float]] = {}
    cpu_s: dict[str, float] = {}
    steps = 0
    for round_ in range(args.repeat):
        order = list(ways.items())
        for name, url in order[round_ % 3 :] + order[: round_ % 3]:
            seconds, closing, steps, in_run, in_worker, cpu = asyncio.run(timed(plan, url))
            cpu_s[name] = min(cpu_s.get(name, float("inf")), cpu)
            previous = best.get(name, (float("inf"), float("inf")))
            best[name] = (min(previous[0], seconds), min(previous[1], closing))
            spent = hook_s.get(name, (float("inf"), float("inf")))
            hook_s[name] = (min(spent[0], in_run), min(spent[1], in_worker))
    server.shutdown()
    base = best["none"][0]
    report = {
        "steps": steps,
        "repeat": args.repeat,
        "run_s": {name: round(v[0], 4) for name, v in best.items()},
        "overhead_us_per_step": {
            name: round((v[0] - base) / steps * 1e6, 1) for name, v in best.items() if name != "none"
        },
        "no_hook_us_per_step": round(base / steps * 1e6, 1),
        "cpu_overhead_us_per_step": {
            name: round((v - cpu_s["none"]) / steps * 1e6, 1) for name, v in cpu_s.items() if name != "none"
        },
        "hook_us_per_step_in_run_thread": {
            name: round(v[0] / steps * 1e6, 2) for name, v in hook_s.items() if name != "none"
        },
        "span_building_us_per_step_in_worker": {
            name: round(v[1] / steps * 1e6, 1) for name, v in hook_s.items() if name != "none"
        },
        "close_s": {name: round(v[1], 3) for name, v in best.items() if name != "none"},
        "batches_received": Sink.received,
        "python": platform.python_version(),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
