"""The optimizer's budget, counted at the model client: every call that reaches a model.

While `metering(meter)` is active, each model client the engine (or an `llm_judge` metric)
builds is wrapped in a `MeteredClient`. The wrapper reserves one call from the meter before
the request goes out and refuses it when the budget is spent, so the limit on calls is hard
even with many examples in flight. Retries and fallbacks are separate calls and count; a
call served from the LLM cache never reaches a client and does not count, though the cache
tells the wrapper what the answer cost when it was made (`cached_answer`), so a candidate served
from the cache is priced like one that made its calls. With a USD limit,
calls are serialised, so at most one call can cross it (the same rule as `--max-cost`).

The wrapper is a `studio.models.client_hooks` entry, active in the current context only.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from studio.flow.spec import ModelSpec
from studio.models import client_hooks
from studio.models.base import Completion, ModelClient, ModelError, Request


def usage_key(model: str, request: dict[str, Any]) -> str:
    """Identity of a request to a model, as stored with a call record (`CallRecord.request`)."""
    body = json.dumps({"model": model, "request": request}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


@dataclass
class Meter:
    """Calls, tokens and USD that reached a model, with optional limits on calls and USD."""

    max_calls: int | None = None
    max_cost_usd: float | None = None
    calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    refused: int = 0
    """Calls refused because the budget was spent."""
    usage: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Tokens and USD of each distinct request made, so a later cache hit can be priced."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    @property
    def remaining(self) -> int | None:
        """Calls left, or None without a call limit."""
        return None if self.max_calls is None else max(0, self.max_calls - self.calls)

    @property
    def spent(self) -> bool:
        """Whether no further call may be made."""
        if self.max_calls is not None and self.calls >= self.max_calls:
            return True
        return self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd

    def reserve(self) -> None:
        """Count one call before it is made; raises ModelError(kind="budget") when none is left."""
        if self.spent:
            self.refused += 1
            limit = f"{self.max_calls} calls" if self.max_calls is not None else f"${self.max_cost_usd}"
            raise ModelError("budget", f"the optimizer's budget ({limit}) is spent")
        self.calls += 1

    def record(self, model: str, request: Request, completion: Completion) -> None:
        tokens = completion.input_tokens + completion.output_tokens
        self.tokens += tokens
        self.cost_usd += completion.cost_usd
        self.usage[usage_key(model, request.as_json())] = (tokens, completion.cost_usd)

    def price(self, model: str, request: Request, completion: Completion) -> None:
        """What a request served from the LLM cache cost when it was made (its stored usage): the
        price of a later hit, not a call made now, so nothing is spent."""
        key = usage_key(model, request.as_json())
        self.usage.setdefault(key, (completion.input_tokens + completion.output_tokens, completion.cost_usd))


class MeteredClient:
    """A model client whose every call is reserved from, and recorded in, a meter."""

    def __init__(self, inner: ModelClient, meter: Meter, model: str) -> None:
        self.inner = inner
        self.meter = meter
        self.model = model
        self.name = inner.name

    def __getattr__(self, name: str) -> Any:
        """What else the client offers (`supports_tools`, `fingerprint`) is the inner client's."""
        return getattr(self.inner, name)

    async def complete(self, request: Request) -> Completion:
        if self.meter.max_cost_usd is None:
            return await self._complete(request)
        async with self.meter.lock:
            return await self._complete(request)

    def cached_answer(self, request: Request, completion: Completion) -> None:
        """The LLM cache served `request` with an answer that cost `completion`'s usage when made."""
        self.meter.price(self.model, request, completion)

    async def _complete(self, request: Request) -> Completion:
        self.meter.reserve()
        completion = await self.inner.complete(request)
        self.meter.record(self.model, request, completion)
        return completion


@contextmanager
def metering(meter: Meter) -> Iterator[Meter]:
    """Count (and limit) every model call made in this context, tasks started from it included."""

    def hook(client: ModelClient, spec: ModelSpec) -> ModelClient:
        return MeteredClient(client, meter, spec.model)

    token = client_hooks.set((*client_hooks.get(), hook))
    try:
        yield meter
    finally:
        client_hooks.reset(token)
