"""Provider client overhead and streaming latency, against one real local server.

Starts llama.cpp's server with the embedded SmolLM2 on 127.0.0.1 (`studio.models.local_server`)
and measures, in one run:

  * overhead: our client (`LiteLLMModel.complete`, and the node binding `BoundLLM.complete` with
    its call record, cache off) against a raw `litellm.acompletion` call with the same arguments,
    interleaved call by call in shuffled order (one output token, the same prompt: the server's prompt cache makes
    the model's share small, so the client's share shows). Goal: ≤ 5% or ≤ 5 ms.
    `*_own_ms` is the part of our calls spent outside `litellm.acompletion` (request building,
    capability filter, reply parsing, the call record): our overhead without the server's noise.
  * streaming: time to the first token with `stream()` against the time to the whole reply with
    `complete()`, both through our client, on a 48-token reply.

Run:
    .venv/bin/python bench/providers.py [--calls 40] [--replies 5]
Prints one JSON object.

`bench/providers.py --scale [--examples 300] [--rates 20,5,100]` measures instead batches at scale
against the provider simulator: rate limits, 500s and stalls (`bench/providers_scale.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from studio.flow.spec import ModelSpec
from studio.models.base import Message, Request
from studio.models.litellm_client import LiteLLMModel, import_litellm
from studio.models.local_server import start
from studio.runtime.budget import Budget
from studio.runtime.llm import BoundLLM

PROMPT = "Name a colour."
SETTLE_S = 0.05
"""Untimed pause after each call: litellm's background logging of one call must not land in the next."""


class Inner:
    """Times the seconds spent inside `litellm.acompletion`, so the rest of a call is ours alone."""

    def __init__(self, litellm: Any) -> None:
        self.litellm, self.original, self.spent = litellm, litellm.acompletion, 0.0

        async def acompletion(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await self.original(*args, **kwargs)
            finally:
                self.spent += time.perf_counter() - start

        litellm.acompletion = acompletion

    def restore(self) -> None:
        self.litellm.acompletion = self.original


async def timed(call: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await call()
    return time.perf_counter() - start


async def overhead(api_base: str, calls: int) -> dict[str, Any]:
    """Median seconds per call of raw litellm, our client and our binding, interleaved."""
    litellm = import_litellm()
    spec = ModelSpec(model="openai/smollm2", api_base=api_base, max_tokens=1, temperature=0.0)
    client = LiteLLMModel(spec)
    request = Request(messages=(Message("user", PROMPT),), max_tokens=1)
    bound = BoundLLM("n", "default", {"default": spec}, lambda _: client, [], Budget(), None)

    async def raw() -> Any:
        return await litellm.acompletion(
            model="openai/smollm2",
            api_base=api_base,
            api_key="no-key",
            messages=[{"role": "user", "content": PROMPT}],
            temperature=0.0,
            max_tokens=1,
            max_retries=0,
        )

    async def ours() -> Any:
        return await client.complete(request)

    async def binding() -> Any:
        return await bound.complete(messages=[Message("user", PROMPT)], max_tokens=1)

    for call in (raw, ours, binding, raw, ours, binding):  # warm up: imports, connections, prompt cache
        await call()
    inner = Inner(litellm)
    times: dict[str, list[float]] = {"raw": [], "client": [], "binding": []}
    own: dict[str, list[float]] = {"client": [], "binding": []}
    order = random.Random(0)
    named = {"raw": raw, "client": ours, "binding": binding}
    for _ in range(calls):
        for name in order.sample(list(named), k=3):  # shuffled: no variant always follows another
            inner.spent = 0.0
            times[name].append(await timed(named[name]))
            if name in own:
                own[name].append(times[name][-1] - inner.spent)
            await asyncio.sleep(SETTLE_S)
    inner.restore()
    medians = {name: statistics.median(values) for name, values in times.items()}
    result: dict[str, Any] = {"calls_each": calls, "median_ms": {k: round(v * 1000, 2) for k, v in medians.items()}}
    for name, values in own.items():
        result[f"{name}_own_ms"] = round(statistics.median(values) * 1000, 3)
    for name in ("client", "binding"):
        extra = medians[name] - medians["raw"]
        result[f"{name}_overhead_ms"] = round(extra * 1000, 2)
        result[f"{name}_ratio"] = round(medians[name] / medians["raw"], 3)
        result[f"{name}_goal_met"] = extra <= 0.005 or medians[name] / medians["raw"] <= 1.05
    return result


async def streaming(api_base: str, replies: int, tokens: int) -> dict[str, Any]:
    """Time to first token (stream) and to the whole reply (complete), through our client."""
    client = LiteLLMModel(ModelSpec(model="openai/smollm2", api_base=api_base))
    first_token, stream_total, whole = [], [], []
    for index in range(replies):
        request = Request(
            messages=(Message("user", f"Write a short story about a fox, number {index}."),),
            max_tokens=tokens,
            extra={"ignore_eos": True},
        )
        seen: list[float] = []

        async def streamed(request: Request = request, seen: list[float] = seen) -> None:
            start = time.perf_counter()

            def on_text(_: str) -> None:
                if not seen:
                    seen.append(time.perf_counter() - start)

            await client.stream(request, on_text)
            stream_total.append(time.perf_counter() - start)

        async def complete(request: Request = request) -> None:
            whole.append(await timed(lambda: client.complete(request)))

        for call in (streamed, complete) if index % 2 == 0 else (complete, streamed):  # alternate who goes first
            await call()
        first_token.append(seen[0])
    ttft, full = statistics.median(first_token), statistics.median(whole)
    return {
        "replies": replies,
        "reply_tokens": tokens,
        "median_first_token_s": round(ttft, 3),
        "median_stream_total_s": round(statistics.median(stream_total), 3),
        "median_whole_reply_s": round(full, 3),
        "first_token_over_whole_reply": round(ttft / full, 3),
    }


async def measure(api_base: str, calls: int, replies: int, tokens: int) -> dict[str, Any]:
    return {
        "overhead": await overhead(api_base, calls),
        "streaming": await streaming(api_base, replies, tokens),
    }


def main() -> None:
    if "--scale" in sys.argv:  # batches through the provider simulator: bench/providers_scale.py
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from bench.providers_scale import main as scale

        scale()
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--replies", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=48)
    args = parser.parse_args()
    server = start()
    try:
        figures = asyncio.run(measure(server.url + "/v1", args.calls, args.replies, args.tokens))
    finally:
        server.stop()
    report = {
        "command": f"python bench/providers.py --calls {args.calls} --replies {args.replies} --tokens {args.tokens}",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
        **figures,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
