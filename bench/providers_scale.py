"""Real providers at batch scale: batches through the provider simulator (`tests/providers_sim.py`).

Run through `bench/providers.py --scale` (or this file). Each case runs a one-node flow
(`llm.generate` on `openai/sim` + `api_base`, exact-match metric) over N examples at
`--concurrency` against a simulator that lets RATE requests/s through (token bucket, burst 5),
answers 5% of the calls it lets through with a 500 and 2% after 8 s, and reports: examples lost
(not succeeded), the batch's time against N/RATE, and the rate-limit (429) answers per example.
The alias sets `timeout_s: 2` (a stall is cut and retried) unless the case says otherwise.

The overhead case runs the same batch against an unlimited, fault-free simulator with the
limiter on and off (rounds interleaved; "off" builds no limiter), and times the limiter's own
work per call (`slot` plus `succeeded`, no waiting) against the time of a call.

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from studio.evaluate.batch import BatchOptions, batch  # noqa: E402
from studio.models import litellm_client  # noqa: E402
from studio.models.capabilities import import_litellm  # noqa: E402
from studio.models.limiter import Limiter  # noqa: E402
from studio.store import SQLiteStore  # noqa: E402
from tests.providers_sim import Schedule, Simulator  # noqa: E402

FLOW = """flowstudio: 1
name: echo
inputs:
  word: {{type: str}}
outputs:
  word: $echo.text
models:
  default: {{model: openai/sim, api_base: '{url}/v1', max_tokens: 4{extra}}}
nodes:
  echo: {{type: llm.generate, inputs: {{word: $inputs.word}}, config: {{prompt: 'Repeat: {{{{ word }}}}'}}}}
"""
CUT = ", timeout_s: 2"


def faulty(rate: float, **changes: Any) -> Schedule:
    """The issue's provider: RATE requests/s (burst 5), 5% 500s, 2% answers after 8 s."""
    return Schedule(**{"rate": rate, "burst": 5, "fail": 0.05, "slow": 0.02, "slow_s": 8, "seed": 1, **changes})


def run_case(schedule: Schedule, examples: int, concurrency: int, extra: str = CUT) -> dict[str, Any]:
    """One batch against a fresh simulator: lost examples, time, 429s per example."""
    with tempfile.TemporaryDirectory() as tmp, Simulator(schedule) as sim:
        folder = Path(tmp)
        flow, data = folder / "echo.yaml", folder / "words.jsonl"
        flow.write_text(FLOW.format(url=sim.url, extra=extra))
        data.write_text("".join(json.dumps({"word": f"w{i}", "expected": f"w{i}"}) + "\n" for i in range(examples)))
        store = SQLiteStore(folder / "b.db")
        options = BatchOptions(
            flow=str(flow), data=str(data), expect={"word": "expected"}, concurrency=concurrency, cache=False
        )
        result = asyncio.run(batch(options, store))
        store.close()
        stats = sim.stats()
    summary = result.summary
    ideal = examples / schedule.rate if schedule.rate else None
    return {
        "rate": schedule.rate,
        "examples": examples,
        "lost": summary["failed"],
        "errors_by_kind": summary["errors_by_kind"],
        "score": summary["score"],
        "batch_s": summary["seconds"],
        "ideal_s": ideal,
        "vs_ideal": round(summary["seconds"] / ideal, 3) if ideal else None,
        "rate_limited_per_example": round(stats["rate_limited"] / examples, 3),
        "examples_per_s": summary["examples_per_s"],
        "server": {k: stats[k] for k in ("requests", "rate_limited", "failed", "slow")},
    }


@contextmanager
def no_limiter() -> Iterator[None]:
    """Clients built inside get no limiter: calls go out at once, as before the limiter."""
    original = litellm_client.limiter_for  # type: ignore[attr-defined]
    litellm_client.limiter_for = lambda *_, **__: None  # type: ignore[attr-defined,assignment]
    try:
        yield
    finally:
        litellm_client.limiter_for = original  # type: ignore[attr-defined]


def limiter_own_us(calls: int = 20_000) -> float:
    """Microseconds of the limiter's own work per call (a turn and its success, nothing to wait for)."""

    async def turns() -> float:
        limiter = Limiter("bench")
        start = time.perf_counter()
        for _ in range(calls):
            async with limiter.slot(10) as slot:
                slot.succeeded(10)
        return (time.perf_counter() - start) / calls * 1e6

    return round(asyncio.run(turns()), 2)


def overhead(examples: int, rounds: int, concurrency: int) -> dict[str, Any]:
    """Examples per second with and without the limiter on an unlimited provider, interleaved."""
    with_limiter: list[float] = []
    without: list[float] = []
    for number in range(rounds):
        for limited in (True, False) if number % 2 else (False, True):  # ABBA: drifting load hits both alike
            if limited:
                with_limiter.append(run_case(Schedule(), examples, concurrency)["examples_per_s"])
                continue
            with no_limiter():
                without.append(run_case(Schedule(), examples, concurrency)["examples_per_s"])
    on, off = statistics.median(with_limiter), statistics.median(without)
    own = limiter_own_us()
    return {
        "examples": examples,
        "rounds": rounds,
        "examples_per_s_with_limiter": with_limiter,
        "examples_per_s_without": without,
        "median_with": on,
        "median_without": off,
        "throughput_change": round(on / off - 1, 4),
        "limiter_own_us_per_call": own,
        "limiter_share_of_a_call": round(own / 1e6 * off, 6),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--scale", action="store_true", help="(the flag bench/providers.py dispatches on)")
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rates", default="20,5,100")
    parser.add_argument("--overhead-examples", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import_litellm()  # once, before any clock starts
    cases = []
    for rate in (float(r) for r in args.rates.split(",")):
        cases.append({"case": f"{rate:g} req/s", **run_case(faulty(rate), args.examples, args.concurrency)})
        print(json.dumps(cases[-1]), file=sys.stderr, flush=True)
    variants = [
        ("20 req/s, no x-ratelimit headers (AIMD alone)", faulty(20, limit_headers=False), CUT),
        ("20 req/s, default timeout_s (120 s: stalls wait 8 s)", faulty(20), ""),
    ]
    for name, schedule, extra in variants:
        cases.append({"case": name, **run_case(schedule, args.examples, args.concurrency, extra)})
        print(json.dumps(cases[-1]), file=sys.stderr, flush=True)
    report = {
        "command": "python bench/providers.py --scale "
        f"--examples {args.examples} --rates {args.rates} --rounds {args.rounds}",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, "
        f"{platform.python_implementation()} {platform.python_version()}",
        "cases": cases,
        "overhead": overhead(args.overhead_examples, args.rounds, args.concurrency),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
