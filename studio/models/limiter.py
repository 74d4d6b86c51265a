"""Client-side rate limits: one limiter per provider model (model string and base URL) per process.

Every call a provider client makes takes a `slot` first, so all runs of a batch, an optimizer's
candidates and a serve process's requests share one pace. An alias' `rpm`, `tpm` and
`max_concurrency` set fixed limits. Without `rpm` the request rate is adaptive (AIMD): unlimited
until the provider's first 429, then set to what the provider announces in its rate-limit headers
(`x-ratelimit-limit-requests`, `anthropic-ratelimit-requests-limit`; less 5% headroom) or, without
them, to what got through in the last second (at least 1 a second) and quadrupled each second
until the next 429; after that
raised by 10% a second while callers are waiting and calls succeed (never above the announced
limit), and cut by a fifth on a 429 for a request sent at the current rate. A `Retry-After` pauses every caller until it has passed.
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

MIN_RATE = 0.05
"""Requests per second the adaptive rate never goes below (3 a minute)."""
FIRST_RATE = 1.0
"""The least first estimate without an announced limit: the 429s of a first burst come back
before its answers, so what got through may read 0."""
DECREASE = 0.8
"""The adaptive rate is multiplied by this on a 429."""
GROWTH = 0.1
"""Relative growth per second of the adaptive rate while callers wait and calls succeed."""
PROBE_GROWTH = 1.4
"""Growth per second until the second 429 (the first estimate is a cautious one): about fourfold."""
ANNOUNCED_SHARE = 1.0
"""Share of a provider's announced request limit the adaptive rate aims at (headroom for jitter)."""
CALM_S = 60.0
"""After this long without a 429, the adaptive rate is forgotten: calls go at once again until the next one."""
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

    def succeeded(self, tokens: int, announced_rpm: float | None = None) -> None:
        """The call was answered and used `tokens` (prompt plus reply); `announced_rpm` is the
        request limit the provider's headers gave, if any."""
        if self.limiter is not None:
            self.limiter.announce(announced_rpm)
            self.limiter.succeeded(self, tokens)

    def limited(self, retry_after_s: float | None, announced_rpm: float | None = None) -> None:
        """The provider answered 429, maybe saying how long to wait and what its limit is."""
        if self.limiter is not None:
            self.limiter.announce(announced_rpm)
            self.limiter.limited(self, retry_after_s)


class Limiter:
    """The pace of one provider model in this process."""

    def __init__(self, key: str, limits: Limits = Limits()) -> None:
        self.key = key
        self.limits = limits
        self.rate: float | None = None
        """The adaptive request rate (per second); None until the first 429."""
        self.probing = False
        self.ceiling: float | None = None
        """What the provider announced (its per-minute request limit), as requests per second to aim at."""
        self.rate_limited = 0
        """429 answers seen."""
        self.waiting = 0
        """Callers waiting for their slot now."""
        self.in_flight = 0
        self._lock = threading.Lock()
        self._next_slot = 0.0
        self._paused_until = 0.0
        self._line: deque[tuple[asyncio.Future[None], int]] = deque()
        """Callers waiting for their turn, first come first served."""
        self._timer: asyncio.TimerHandle | None = None
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
        """Wait in line until the pace and the token budget let this call go; returns when it went."""
        with self._lock:
            now = time.monotonic()
            if self.rate is not None and not self._line and now - self._last_decrease > CALM_S:
                self.rate, self.probing = None, False  # a long calm: the provider may allow more now
            if not self._line and self._ready_at(now, tokens) <= now:
                self._take(now, tokens)
                return now
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._line.append((waiter, tokens))
            if len(self._line) == 1:
                self._arm()
        try:
            await waiter
        except BaseException:
            with self._lock:
                if (waiter, tokens) in self._line:
                    self._line.remove((waiter, tokens))
                    self._arm()
            raise
        self._demand_at = time.monotonic()
        return self._demand_at

    def _ready_at(self, now: float, tokens: int) -> float:
        """When a call of `tokens` may go: after any pause, its request slot and its tokens."""
        go = max(now, self._paused_until)
        if self.current_rate() is not None:
            go = max(go, self._next_slot)
        if self.limits.tpm:
            self._refill(now)
            per_s = self.limits.tpm / 60
            need = min(tokens, per_s)  # a call bigger than the bucket goes when it is full, into debt
            if self._token_level < need:
                go = max(go, now + (need - self._token_level) / per_s)
        return go

    def _take(self, now: float, tokens: int) -> None:
        rate = self.current_rate()
        if rate is not None:  # keep the cadence when a timer fires a little late, never save up slots
            self._next_slot = max(self._next_slot, now - 0.1 / rate) + 1 / rate
        if self.limits.tpm:
            self._token_level -= tokens

    def _refill(self, now: float) -> None:
        assert self.limits.tpm is not None
        per_s = self.limits.tpm / 60
        self._token_level = min(per_s, self._token_level + (now - self._token_stamp) * per_s)
        self._token_stamp = now

    def _arm(self) -> None:
        """Set the timer that lets the head of the line go (again after every change of pace)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._line and self._line[0][0].done():
            self._line.popleft()
        if not self._line:
            return
        waiter, tokens = self._line[0]
        now = time.monotonic()
        try:
            self._timer = waiter.get_loop().call_later(max(0.0, self._ready_at(now, tokens) - now), self._release)
        except RuntimeError:  # the waiter's event loop is closed
            self._line.popleft()
            self._arm()

    def _release(self) -> None:
        """Let go every waiter at the head of the line whose time has come, then re-arm."""
        with self._lock:
            self._timer = None
            now = time.monotonic()
            while self._line:
                waiter, tokens = self._line[0]
                if not waiter.done():
                    if self._ready_at(now, tokens) > now + 0.0005:
                        break
                    self._take(now, tokens)
                    waiter.set_result(None)
                self._line.popleft()
            self._arm()

    def announce(self, rpm: float | None) -> None:
        """The provider's own word on its request limit (per minute): the adaptive rate's first
        estimate and its ceiling."""
        if rpm:
            self.ceiling = rpm / 60 * ANNOUNCED_SHARE

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
                if self.ceiling is not None:
                    self.rate = min(self.rate, self.ceiling)
                if self._line:
                    self._arm()

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
            if self.rate is None:
                got_through = sum(1 for t in self._successes if t >= now - WINDOW_S) / WINDOW_S
                self.rate = self.ceiling or max(FIRST_RATE, got_through)
                self.probing = self.ceiling is None
            elif slot.sent_at >= self._last_decrease:
                self.rate = max(MIN_RATE, self.rate * DECREASE)
                self.probing = False
            else:
                self._arm()
                return
            self._last_decrease = self._last_growth = now
            self._arm()

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
