"""The rate limiter of a provider model: fixed limits pace calls, a 429 turns on the adaptive rate
(from the announced limit, else from what got through), Retry-After pauses every caller, success
grows the rate back, and one limiter serves every client of a model in the process."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from studio.cli.evaluate import _pressure_column
from studio.flow.spec import ModelSpec
from studio.models.limiter import DECREASE, Limiter, Limits, limiter_for, pressure, turn
from studio.models.litellm_client import LiteLLMModel, announced_rpm, limit_headers


async def go_times(limiter: Limiter, calls: int, tokens: int = 0) -> list[float]:
    """When each of `calls` concurrent callers got its turn, from the first."""
    times: list[float] = []

    async def one() -> None:
        async with limiter.slot(tokens) as slot:
            times.append(slot.sent_at)

    await asyncio.gather(*(one() for _ in range(calls)))
    return [t - times[0] for t in sorted(times)]


async def test_rpm_paces_calls_evenly() -> None:
    times = await go_times(Limiter("m", Limits(rpm=600)), 6)  # 10 a second
    assert 0.45 <= times[-1] <= 0.8  # five gaps of 0.1 s (a loaded machine's timers fire late, never early)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) > 0.08  # no burst


async def test_without_limits_calls_go_at_once() -> None:
    limiter = Limiter("m")
    times = await go_times(limiter, 20)
    assert times[-1] < 0.05 and limiter.current_rate() is None


async def test_max_concurrency_holds_calls_back_while_others_are_in_flight() -> None:
    limiter = Limiter("m", Limits(max_concurrency=2))
    in_flight, most = 0, 0

    async def one() -> None:
        nonlocal in_flight, most
        async with limiter.slot():
            in_flight += 1
            most = max(most, in_flight)
            await asyncio.sleep(0.02)
            in_flight -= 1

    await asyncio.gather(*(one() for _ in range(8)))
    assert most == 2 and limiter.in_flight == 0


async def test_tpm_makes_big_calls_wait_their_tokens() -> None:
    limiter = Limiter("m", Limits(tpm=6000))  # 100 tokens a second, a bucket of 100
    times = await go_times(limiter, 3, tokens=50)
    assert times[1] < 0.05  # the bucket held both
    assert 0.4 <= times[2] <= 0.9  # the third waits for 50 tokens (0.5 s)


async def test_a_429_sets_the_rate_from_the_announced_limit_and_pauses_for_retry_after() -> None:
    limiter = Limiter("m")
    async with limiter.slot() as slot:
        slot.limited(0.3, announced_rpm=1200)
    assert limiter.current_rate() == pytest.approx(20)
    assert 0.2 < limiter.paused_s() <= 0.3
    start = time.monotonic()
    async with limiter.slot() as slot:
        assert slot.waited_s >= 0.25 and time.monotonic() - start >= 0.25


async def test_a_429_without_headers_starts_from_what_got_through_and_probes_up() -> None:
    limiter = Limiter("m")
    for _ in range(3):
        async with limiter.slot() as slot:
            slot.succeeded(10)
    async with limiter.slot() as slot:
        slot.limited(None)
    assert limiter.current_rate() == pytest.approx(3) and limiter.probing
    await go_times(limiter, 4)  # callers wait: the rate may grow while calls succeed
    async with limiter.slot() as slot:
        slot.succeeded(10)
    assert limiter.current_rate() is not None and limiter.current_rate() > 3  # type: ignore[operator]


async def test_only_a_429_for_a_call_sent_at_the_current_rate_cuts_it() -> None:
    limiter = Limiter("m")
    async with limiter.slot() as early, limiter.slot() as late:
        early.limited(None, announced_rpm=600)  # the first 429 sets 10/s
        late.limited(None)  # sent before that: says nothing about 10/s
        assert limiter.current_rate() == pytest.approx(10)
    await asyncio.sleep(0.01)
    async with limiter.slot() as fresh:
        fresh.limited(None)
    assert limiter.current_rate() == pytest.approx(10 * DECREASE)
    assert limiter.rate_limited == 3


async def test_a_pause_reorders_no_one_and_pressure_says_why_calls_wait() -> None:
    limiter = Limiter("m")
    async with limiter.slot() as slot:
        slot.limited(0.6, announced_rpm=600)
    order: list[int] = []

    async def one(number: int) -> None:
        async with limiter.slot():
            order.append(number)

    tasks = [asyncio.create_task(one(n)) for n in range(5)]
    await asyncio.sleep(0.05)
    assert limiter.waiting == 5
    text = limiter.pressure()
    assert text is not None and text.startswith("waiting on rate limit: 10 req/s") and "paused" in text
    await asyncio.gather(*tasks)
    assert order == [0, 1, 2, 3, 4] and limiter.pressure() is None


async def test_a_cancelled_caller_leaves_the_line() -> None:
    limiter = Limiter("m", Limits(rpm=60))
    async with limiter.slot():
        pass
    waiting = asyncio.create_task(go_times(limiter, 1))
    await asyncio.sleep(0.05)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert limiter.waiting == 0 and not limiter._line


async def test_one_limiter_per_model_and_address_shared_by_every_client() -> None:
    spec = ModelSpec(model="openai/shared-test", api_base="http://127.0.0.1:9/v1", rpm=100)
    first, second = LiteLLMModel(spec), LiteLLMModel(spec.model_copy(update={"rpm": 50}))
    other = LiteLLMModel(spec.model_copy(update={"api_base": "http://127.0.0.1:10/v1"}))
    assert first.limiter is second.limiter is limiter_for(spec.model, spec.api_base)
    assert first.limiter is not other.limiter
    assert first.limiter is not None and first.limiter.limits.rpm == 50  # the stricter alias wins


async def test_pressure_names_the_busiest_limiter() -> None:
    limiter = limiter_for("openai/pressure-test", None, Limits(rpm=60))
    async with turn(limiter):
        pass
    waiting = asyncio.create_task(go_times(limiter, 2))
    await asyncio.sleep(0.05)
    assert pressure() == "waiting on rate limit: 1 req/s"
    column = _pressure_column()  # the batch progress bar's column reads it at every refresh
    assert column.render(None).plain == "waiting on rate limit: 1 req/s"
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting


async def test_no_limiter_means_no_wait() -> None:
    async with turn(None, 10) as slot:
        slot.succeeded(10)
        slot.limited(1.0)
    assert slot.waited_s == 0.0


def test_rate_limit_headers_are_read_from_a_litellm_reply() -> None:
    class Reply:
        _hidden_params = {
            "additional_headers": {
                "llm_provider-x-ratelimit-limit-requests": "1200",
                "x-ratelimit-remaining-requests": "3",
                "llm_provider-retry-after": "1",
                "content-type": "application/json",
            }
        }

    headers = limit_headers(Reply())
    assert headers == {"retry-after": "1", "x-ratelimit-limit-requests": "1200", "x-ratelimit-remaining-requests": "3"}
    assert announced_rpm(headers) == 1200
    assert announced_rpm({"anthropic-ratelimit-requests-limit": "50"}) == 50
    assert announced_rpm({}) is None and limit_headers(object()) is None


async def test_a_long_calm_forgets_the_adaptive_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    limiter = Limiter("m")
    async with limiter.slot() as slot:
        slot.limited(None, announced_rpm=60)
    assert limiter.current_rate() == 1
    monkeypatch.setattr(limiter, "_last_decrease", time.monotonic() - 61)
    async with limiter.slot():
        pass
    assert limiter.current_rate() is None
