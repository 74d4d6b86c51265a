"""Client-side rate limits: one limiter per provider model (model string and base URL) per process.

Every call a provider client makes takes a `slot` first, so all runs of a batch, an optimizer's
candidates and a serve process's requests share one pace. An alias' `rpm`, `tpm` and
`max_concurrency` set fixed limits. Without `rpm` the request rate is adaptive (AIMD): unlimited
until the provider's first 429, then set from what got through (or from `Retry-After`), raised a
little each second while callers are waiting and calls succeed, and cut by a fifth on a 429 for
a request sent at the current rate. A `Retry-After` pauses every caller until it has passed.
Callers are paced (one slot every 1/rate seconds), so retries never go out as a wave.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

MIN_RATE = 0.1
"""Requests per second the adaptive rate never goes below."""
DECREASE = 0.8
"""The adaptive rate is multiplied by this on a 429."""
GROWTH = 0.1
"""Relative growth per second of the adaptive rate while callers wait and calls succeed."""
PROBE_GROWTH = 0.7
"""Growth per second until the second 429 (the first estimate is a cautious one): about doubling."""
WINDOW_S = 1.0
"""How far back successes count for the first estimate, and how long demand counts as waiting."""


@dataclass(frozen=True)
class Limits:
    """An alias' fixed limits; None: not limited (the request rate then adapts)."""

    rpm: int | None = None
    tpm: int | None = None
    max_concurrency: int | None = None


@dataclass
class Slot:
    """One call's turn: how long it waited for it, and when it went out."""

    limiter: Limiter | None
    waited_s: float
    sent_at: float
    tokens: int
    """Tokens reserved for the call (an estimate, settled by `succeeded`)."""

    def succeeded(self, tokens: int) -> None:
        """The call was answered and used `tokens` (prompt plus reply)."""
        if self.limiter is not None:
            self.limiter.succeeded(self, tokens)

    def limited(self, retry_after_s: float | None) -> None:
        """The provider answered 429, maybe saying how long to wait."""
        if self.limiter is not None:
            self.limiter.limited(self, retry_after_s)


class Limiter:
    """The pace of one provider model in this process."""

    def __init__(self, key: str, limits: Limits = Limits()) -> None:
        self.key = key
        self.limits = limits
        self.rate: float | None = None
        """The adaptive request rate (per second); None until the first 429."""
        self.probing = False
        self.rate_limited = 0
        """429 answers seen."""
        self.waiting = 0
        """Callers waiting for their slot now."""
        self.in_flight = 0
        self._lock = threading.Lock()
        self._next_slot = 0.0
        self._paused_until = 0.0
        self._generation = 0
        self._last_decrease = 0.0
        self._last_growth = 0.0
        self._demand_at = -WINDOW_S
        self._successes: deque[float] = deque()
        self._token_level = float(limits.tpm or 0) / 60
        self._token_stamp = time.monotonic()
        self._waiters: deque[asyncio.Future[None]] = deque()

    def tighten(self, limits: Limits) -> None:
        """Keep the stricter of each fixed limit (two aliases may name the same model)."""

        def lower(a: int | None, b: int | None) -> int | None:
            return b if a is None else a if b is None else min(a, b)

        self.limits = Limits(
            lower(self.limits.rpm, limits.rpm),
            lower(self.limits.tpm, limits.tpm),
            lower(self.limits.max_concurrency, limits.max_concurrency),
        )

    def current_rate(self) -> float | None:
        """Requests per second allowed now: the fixed `rpm`'s, else the adaptive one (None: unlimited)."""
        fixed = self.limits.rpm / 60 if self.limits.rpm else None
        if fixed is None:
            return self.rate
        return fixed if self.rate is None else min(fixed, self.rate)

    @asynccontextmanager
    async def slot(self, tokens: int = 0) -> AsyncIterator[Slot]:
        """Wait for a turn (concurrency, request pace, token budget), hold it during the call."""
        start = time.monotonic()
        self.waiting += 1
        try:
            await self._enter()
            try:
                sent_at = await self._pace(tokens)
            except BaseException:
                self._leave()
                raise
        finally:
            self.waiting -= 1
        try:
            yield Slot(self, sent_at - start, sent_at, tokens)
        finally:
            self._leave()

    async def _enter(self) -> None:
        limit = self.limits.max_concurrency
        while limit is not None and self.in_flight >= limit:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        self.in_flight += 1

    def _leave(self) -> None:
        self.in_flight -= 1
        while self._waiters:
            waiter = self._waiters.popleft()
            try:
                waiter.get_loop().call_soon_threadsafe(_wake, waiter)
                return
            except RuntimeError:  # its event loop is closed: the next one
                continue

    async def _pace(self, tokens: int) -> float:
        """Sleep until this caller's slot; returns when it went out (monotonic seconds)."""
        while True:
            with self._lock:
                now = time.monotonic()
                go, generation = self._reserve(now, tokens)
            if go <= now:
                return now
            await asyncio.sleep(go - now)
            if generation == self._generation:
                return time.monotonic()
            # a Retry-After arrived while waiting: the slot is void, take a new one after the pause

    def _reserve(self, now: float, tokens: int) -> tuple[float, int]:
        go = max(now, self._paused_until)
        rate = self.current_rate()
        if rate is not None:
            go = max(go, self._next_slot)
            self._next_slot = go + 1 / rate
        if self.limits.tpm:
            go = max(go, self._take_tokens(now, tokens))
        if go > now:
            self._demand_at = now
        return go, self._generation

    def _take_tokens(self, now: float, tokens: int) -> float:
        """When `tokens` may go under `tpm` (a big call goes into debt that later callers wait out)."""
        assert self.limits.tpm is not None
        per_s = self.limits.tpm / 60
        self._token_level = min(per_s, self._token_level + (now - self._token_stamp) * per_s)
        self._token_stamp = now
        go = now if self._token_level >= 0 else now - self._token_level / per_s
        self._token_level -= tokens
        return go

    def succeeded(self, slot: Slot, tokens: int) -> None:
        """Settle the token estimate; grow the adaptive rate while callers are waiting."""
        with self._lock:
            now = time.monotonic()
            if self.limits.tpm:
                self._token_level += slot.tokens - tokens
            self._successes.append(now)
            while self._successes and self._successes[0] < now - WINDOW_S:
                self._successes.popleft()
            if self.rate is None:
                return
            elapsed = min(now - self._last_growth, WINDOW_S)
            self._last_growth = now
            if now - self._demand_at < WINDOW_S:
                self.rate *= 1 + (PROBE_GROWTH if self.probing else GROWTH) * elapsed

    def limited(self, slot: Slot, retry_after_s: float | None) -> None:
        """A 429: pause everyone for `Retry-After`, and slow down unless the rate changed since
        this call went out (those 429s say nothing about the new rate)."""
        with self._lock:
            now = time.monotonic()
            self.rate_limited += 1
            if self.limits.tpm:
                self._token_level += slot.tokens  # not spent
            if retry_after_s and retry_after_s > 0 and now + retry_after_s > self._paused_until:
                self._paused_until = now + retry_after_s
                self._next_slot = self._paused_until
                self._generation += 1
            if self.rate is None:
                got_through = sum(1 for t in self._successes if t >= now - WINDOW_S) / WINDOW_S
                hinted = 1 / retry_after_s if retry_after_s and retry_after_s > 0 else 0.0
                self.rate = max(MIN_RATE, got_through, hinted)
                self.probing = True
            elif slot.sent_at >= self._last_decrease:
                self.rate = max(MIN_RATE, self.rate * DECREASE)
                self.probing = False
            else:
                return
            self._last_decrease = self._last_growth = now

    def paused_s(self) -> float:
        """Seconds left of a provider's Retry-After pause (0 when none)."""
        return max(0.0, self._paused_until - time.monotonic())

    def pressure(self) -> str | None:
        """`waiting on rate limit: 19.6 req/s` while callers wait for their turn; None otherwise."""
        if not self.waiting:
            return None
        rate = self.current_rate()
        pace = f"{rate:.3g} req/s" if rate is not None else "no rate limit"
        paused = self.paused_s()
        parts = [f"waiting on rate limit: {pace}"]
        if paused >= 0.5:
            parts.append(f"paused {paused:.0f} s by the provider")
        if self.limits.max_concurrency and self.in_flight >= self.limits.max_concurrency:
            parts.append(f"{self.in_flight} in flight")
        return ", ".join(parts)


@asynccontextmanager
async def turn(limiter: Limiter | None, tokens: int = 0) -> AsyncIterator[Slot]:
    """`limiter.slot(tokens)`, or at once when there is no limiter."""
    if limiter is None:
        yield Slot(None, 0.0, time.monotonic(), tokens)
        return
    async with limiter.slot(tokens) as slot:
        yield slot


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


_LIMITERS: dict[str, Limiter] = {}
"""Every limiter of this process, by provider model: shared by everything the process runs."""
_REGISTRY_LOCK = threading.Lock()


def limiter_for(model: str, api_base: str | None, limits: Limits = Limits()) -> Limiter:
    """The process' limiter of `model` at `api_base`, made on first use; given fixed limits tighten it."""
    key = f"{model} @ {api_base}" if api_base else model
    with _REGISTRY_LOCK:
        limiter = _LIMITERS.get(key)
        if limiter is None:
            limiter = _LIMITERS[key] = Limiter(key, limits)
        elif limits != Limits():
            limiter.tighten(limits)
        return limiter


def pressure() -> str | None:
    """What the busiest limiter says while callers wait on it (`waiting on rate limit: 20 req/s`);
    None when no call waits. Shown by the batch progress bar."""
    busy = [limiter for limiter in list(_LIMITERS.values()) if limiter.waiting]
    if not busy:
        return None
    return max(busy, key=lambda limiter: limiter.waiting).pressure()
