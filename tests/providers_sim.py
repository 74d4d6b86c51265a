"""A provider simulator: an OpenAI- and Anthropic-compatible server that rate-limits, fails and
stalls on a seeded schedule, for tests and `bench/providers.py`.

    python -m tests.providers_sim PORT [--rate 20] [--burst 5] [--fail 0.05] [--slow 0.02] [--slow-s 8] [--seed 1]

It serves `POST /v1/chat/completions` and `/v1/completions` (OpenAI) and `POST /v1/messages`
(Anthropic) on 127.0.0.1 (Starlette on uvicorn). Requests pass a token bucket (`rate` per second,
`burst` at most); the others get 429 with `retry-after-ms` and `retry-after` (unless
`--no-retry-after`) and the provider's rate-limit headers. The n-th request let through meets its
fate from a seeded draw: a 500 (`fail`), an answer after `slow_s` (`slow`), else an answer after
`latency_s`. The answer is the last word of the last message, so a flow's output is predictable.
`GET /stats` counts what happened; `POST /control` changes the shares while it runs. It stands in for a provider's HTTP API, never for our code.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Schedule:
    """What the simulated provider allows and how it misbehaves."""

    rate: float | None = None
    """Requests per second let through (token bucket); None: no limit."""
    burst: float = 5
    fail: float = 0.0
    """Share of requests let through that get a 500."""
    slow: float = 0.0
    """Share of requests let through that are answered after `slow_s`."""
    slow_s: float = 8.0
    latency_s: float = 0.005
    seed: int = 1
    retry_after: bool = True
    """Send `retry-after` headers with a 429."""
    limit_headers: bool = True
    """Announce the limit in `x-ratelimit-*` (`anthropic-ratelimit-*`) headers, as OpenAI (Anthropic) do."""

    def arguments(self) -> list[str]:
        """The command-line arguments that give this schedule."""
        args = ["--burst", str(self.burst), "--fail", str(self.fail), "--slow", str(self.slow)]
        args += ["--slow-s", str(self.slow_s), "--latency-s", str(self.latency_s), "--seed", str(self.seed)]
        if self.rate is not None:
            args += ["--rate", str(self.rate)]
        if not self.retry_after:
            args.append("--no-retry-after")
        if not self.limit_headers:
            args.append("--no-limit-headers")
        return args


class Provider:
    """The simulated provider's state: the token bucket, the seeded fates, the counts."""

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self.level = schedule.burst
        self.stamp = time.monotonic()
        self.draws = random.Random(schedule.seed)
        self.stats = {"requests": 0, "answered": 0, "rate_limited": 0, "failed": 0, "slow": 0, "in_flight": 0}
        self.stats["max_in_flight"] = 0

    def admit(self) -> float | None:
        """None when the request may go on, else the seconds until the bucket holds one more."""
        rate = self.schedule.rate
        self.stats["requests"] += 1
        if rate is None:
            return None
        now = time.monotonic()
        self.level = min(self.schedule.burst, self.level + (now - self.stamp) * rate)
        self.stamp = now
        if self.level >= 1:
            self.level -= 1
            return None
        self.stats["rate_limited"] += 1
        return (1 - self.level) / rate

    def fate(self) -> str:
        """`fail`, `slow` or `ok` for the next request let through, from the seeded draw."""
        draw = self.draws.random()
        if draw < self.schedule.fail:
            return "fail"
        if draw < self.schedule.fail + self.schedule.slow:
            return "slow"
        return "ok"

    def limit_headers(self, anthropic: bool, wait_s: float | None) -> dict[str, str]:
        rate = self.schedule.rate
        headers: dict[str, str] = {}
        if rate is not None and self.schedule.limit_headers:
            remaining = str(max(0, math.floor(self.level)))
            reset_s = max(0.0, (self.schedule.burst - self.level) / rate)
            if anthropic:
                headers["anthropic-ratelimit-requests-limit"] = str(round(rate * 60))
                headers["anthropic-ratelimit-requests-remaining"] = remaining
                headers["anthropic-ratelimit-requests-reset"] = f"{reset_s:.3f}s"
            else:
                headers["x-ratelimit-limit-requests"] = str(round(rate * 60))
                headers["x-ratelimit-remaining-requests"] = remaining
                headers["x-ratelimit-reset-requests"] = f"{reset_s:.3f}s"
        if wait_s is not None and self.schedule.retry_after:
            headers["retry-after-ms"] = str(max(1, math.ceil(wait_s * 1000)))
            headers["retry-after"] = str(max(1, math.ceil(wait_s)))
        return headers


def _last_word(body: dict[str, Any]) -> tuple[str, int]:
    """The reply (the last word of the last message or the prompt) and the prompt's word count."""
    if "prompt" in body:
        text = str(body["prompt"])
        words = text.split()
    else:
        messages = body.get("messages") or []
        texts = [_text(m.get("content")) for m in messages]
        text = texts[-1] if texts else ""
        words = " ".join(texts).split()
    last = text.split()
    return (last[-1] if last else ""), len(words)


def _text(content: Any) -> str:
    if isinstance(content, list):  # Anthropic's and OpenAI's content blocks
        return " ".join(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return str(content or "")


def build_app(schedule: Schedule) -> Any:
    """The Starlette app serving the schedule."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    provider = Provider(schedule)

    async def answer(request: Request) -> JSONResponse:
        anthropic = request.url.path.endswith("/messages")
        body = await request.json()
        wait_s = provider.admit()
        if wait_s is not None:
            error = {"type": "rate_limit_error" if anthropic else "rate_limit_exceeded", "message": "slow down"}
            content = {"type": "error", "error": error} if anthropic else {"error": error}
            return JSONResponse(content, status_code=429, headers=provider.limit_headers(anthropic, wait_s))
        headers = provider.limit_headers(anthropic, None)
        fate = provider.fate()
        stats = provider.stats
        stats["in_flight"] += 1
        stats["max_in_flight"] = max(stats["max_in_flight"], stats["in_flight"])
        try:
            if fate == "fail":
                stats["failed"] += 1
                error = {"type": "api_error" if anthropic else "server_error", "message": "simulated failure"}
                content = {"type": "error", "error": error} if anthropic else {"error": error}
                return JSONResponse(content, status_code=500, headers=headers)
            if fate == "slow":
                stats["slow"] += 1
            await asyncio.sleep(schedule.slow_s if fate == "slow" else schedule.latency_s)
        finally:
            stats["in_flight"] -= 1
        stats["answered"] += 1
        reply, prompt_tokens = _last_word(body)
        return JSONResponse(_reply(request.url.path, body, reply, prompt_tokens), headers=headers)

    async def stats(_: Request) -> JSONResponse:
        return JSONResponse(provider.stats)

    async def control(request: Request) -> JSONResponse:
        """Change the schedule's shares while it runs (`{"fail": 0}`): a provider that recovers."""
        changes = await request.json()
        for name in ("fail", "slow", "slow_s", "latency_s"):
            if name in changes:
                setattr(schedule, name, float(changes[name]))
        return JSONResponse({"ok": True})

    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    routes = [
        Route("/v1/chat/completions", answer, methods=["POST"]),
        Route("/v1/completions", answer, methods=["POST"]),
        Route("/v1/messages", answer, methods=["POST"]),
        Route("/stats", stats),
        Route("/control", control, methods=["POST"]),
        Route("/health", health),
    ]
    return Starlette(routes=routes)


def _reply(path: str, body: dict[str, Any], text: str, prompt_tokens: int) -> dict[str, Any]:
    model = str(body.get("model", "sim"))
    if path.endswith("/messages"):
        return {
            "id": "msg_sim",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": prompt_tokens, "output_tokens": 1},
        }
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 1, "total_tokens": prompt_tokens + 1}
    if path.endswith("/completions") and "chat" not in path:
        choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}
        return {"id": "cmpl-sim", "object": "text_completion", "created": 0, "model": model, "choices": [choice]}
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return {"id": "chatcmpl-sim", "object": "chat.completion", "created": 0, "model": model, "choices": [choice], "usage": usage}  # fmt: skip


class Simulator:
    """A running simulator process: `url` (OpenAI at `url + "/v1"`, Anthropic at `url`), `stats()`, `stop()`."""

    def __init__(self, schedule: Schedule | None = None) -> None:
        from studio.models.local_server import free_port

        self.schedule = schedule or Schedule()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "tests.providers_sim", str(self.port), *self.schedule.arguments()]
        self.process = subprocess.Popen(command, cwd=ROOT)
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.url + "/health", timeout=1).close()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("the provider simulator did not start") from None
                time.sleep(0.05)

    def stats(self) -> dict[str, int]:
        """What the simulator counted so far: requests, answered, rate_limited, failed, slow."""
        with urllib.request.urlopen(self.url + "/stats", timeout=5) as reply:
            data: dict[str, int] = json.load(reply)
        return data

    def control(self, **changes: float) -> None:
        """Change the schedule while it runs, e.g. `control(fail=0)`."""
        request = urllib.request.Request(
            self.url + "/control", data=json.dumps(changes).encode(), headers={"content-type": "application/json"}
        )
        urllib.request.urlopen(request, timeout=5).close()

    def stop(self) -> None:
        """Stop the process (by its PID) and wait for it."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def __enter__(self) -> Simulator:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("port", type=int)
    parser.add_argument("--rate", type=float, default=None)
    parser.add_argument("--burst", type=float, default=5)
    parser.add_argument("--fail", type=float, default=0.0)
    parser.add_argument("--slow", type=float, default=0.0)
    parser.add_argument("--slow-s", type=float, default=8.0)
    parser.add_argument("--latency-s", type=float, default=0.005)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-retry-after", action="store_true")
    parser.add_argument("--no-limit-headers", action="store_true")
    args = parser.parse_args()
    schedule = Schedule(
        rate=args.rate,
        burst=args.burst,
        fail=args.fail,
        slow=args.slow,
        slow_s=args.slow_s,
        latency_s=args.latency_s,
        seed=args.seed,
        retry_after=not args.no_retry_after,
        limit_headers=not args.no_limit_headers,
    )
    import uvicorn

    uvicorn.run(build_app(schedule), host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
