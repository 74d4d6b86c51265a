"""The embedded model (local/smollm2): load time and seconds per call.

Run:  .venv/bin/python bench/embedded_model.py
Prints JSON: load seconds, median seconds of a classification-style completion
(max_tokens 8, stop at newline) and of a 64-token chat answer.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from typing import Any

from studio.models import local
from studio.models.base import Message, Request

CLASSIFY = Request(
    prompt="Text: I was charged twice\nLabel: billing\n\nText: The app crashes on start\nLabel: bug\n\nText: My invoice is wrong\nLabel:",
    stop=("\n",),
    max_tokens=8,
)
CHAT = Request(messages=(Message("user", "Write two sentences about the sea."),), max_tokens=64)


async def median_seconds(model: local.LocalModel, request: Request, runs: int) -> tuple[float, int]:
    seconds, tokens = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        done = await model.complete(request)
        seconds.append(time.perf_counter() - start)
        tokens = done.output_tokens
    return statistics.median(seconds), tokens


async def measure() -> dict[str, Any]:
    model = local.LocalModel()
    start = time.perf_counter()
    await model.complete(Request(prompt="Hi", max_tokens=1))
    load_s = time.perf_counter() - start
    classify_s, classify_tokens = await median_seconds(model, CLASSIFY, 10)
    chat_s, chat_tokens = await median_seconds(model, CHAT, 5)
    return {
        "load_and_first_call_s": round(load_s, 3),
        "classify_call_s": round(classify_s, 3),
        "classify_output_tokens": classify_tokens,
        "chat_call_s": round(chat_s, 3),
        "chat_output_tokens": chat_tokens,
        "chat_tokens_per_s": round(chat_tokens / chat_s, 1),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(measure()), indent=2))
