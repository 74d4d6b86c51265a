"""A node's model: its alias bound to settings, with cache, retries, fallbacks and budget.

Every attempt is appended to the step's call records, so the trace shows retries too.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from studio.errors import TRANSIENT, ErrorKind, NodeError
from studio.flow.spec import ModelSpec
from studio.models.base import Completion, Message, ModelClient, ModelError, Request, StreamingClient, TokenSink
from studio.models.capabilities import Capabilities
from studio.node import CallPurpose, ToolCall, ToolReply
from studio.runtime.budget import Budget
from studio.store.base import CallRecord, now
from studio.store.base import LLMCache as Cache

DEFAULT_MAX_TOKENS = 256
MAX_DELAY_S = 30.0


@dataclass(frozen=True)
class Sample:
    """A counterfactual draw of one node's model calls (blame): a temperature and a seed."""

    temperature: float
    seed: int


_PURPOSE: ContextVar[CallPurpose] = ContextVar("flowstudio_call_purpose", default="answer")
"""The purpose of the call in progress (a node's `complete(purpose=...)`), for streaming and the trace."""

_SAMPLING: ContextVar[Mapping[str, Sample]] = ContextVar("flowstudio_sampling", default=MappingProxyType({}))


@contextmanager
def sampling(draws: Mapping[str, Sample]) -> Iterator[None]:
    """Within this block, calls made by a top-level node named in `draws` (its sub-flow steps
    included) are sampled at that temperature with that seed; runs started inside inherit it."""
    token = _SAMPLING.set(dict(draws))
    try:
        yield
    finally:
        _SAMPLING.reset(token)


def _drawn(node_id: str) -> Sample | None:
    top = node_id.split(".", 1)[0].split("[", 1)[0]
    return _SAMPLING.get().get(top)


def cache_key(spec: ModelSpec, request: Request, client: ModelClient) -> str:
    """Content address of a call: model (and what defines it, e.g. a script), messages or
    prompt, and every parameter."""
    fingerprint = getattr(client, "fingerprint", "")
    body = {"model": spec.model, "fingerprint": fingerprint, "request": request.as_json(), "params": spec.params}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def build_request(
    spec: ModelSpec,
    *,
    messages: list[Message] | None,
    prompt: str | None,
    stop: list[str] | None,
    max_tokens: int | None,
    temperature: float | None,
    extra: dict[str, Any] | None = None,
) -> Request:
    """Node arguments first, then the alias' settings."""
    if temperature is None:
        temperature = spec.temperature if spec.temperature is not None else 0.0
    return Request(
        messages=tuple(messages or ()),
        prompt=prompt,
        temperature=temperature,
        max_tokens=max_tokens or spec.max_tokens or DEFAULT_MAX_TOKENS,
        stop=tuple(dict.fromkeys([*(stop or []), *(spec.stop or [])])),
        extra=dict(extra or {}),
    )


class BoundLLM:
    """What `ctx.llm` is for a node that calls a model."""

    def __init__(
        self,
        node_id: str,
        alias: str,
        models: Mapping[str, ModelSpec],
        client: Callable[[str], ModelClient],
        calls: list[CallRecord],
        budget: Budget,
        cache: Cache | None,
        on_token: TokenSink | None = None,
        tag: Mapping[str, str] | None = None,
    ) -> None:
        self.tag = dict(tag or {})
        """Keys the trace keeps in each call's recorded request (`cascade: teacher`); never sent or cached."""
        self.node_id = node_id
        self.alias = alias
        self.models = models
        self.client = client
        self.calls = calls
        self.budget = budget
        self.cache = cache
        self.on_token = on_token
        """Receives the reply text piece by piece as it streams; None: calls do not stream."""

    @property
    def identity(self) -> str:
        """The alias' model and the settings that shape its answers (not retries or prices):
        equal identities answer a prompt alike, so what a node derives from answers may be shared."""
        spec = self.models[self.alias]
        return spec.model_dump_json(
            exclude={
                "retries",
                "retry_backoff_s",
                "rate_limit_wait_s",
                "timeout_s",
                "rpm",
                "tpm",
                "max_concurrency",
                "input_cost_per_token",
                "output_cost_per_token",
            }
        )

    async def complete(
        self,
        *,
        messages: list[Message] | None = None,
        prompt: str | None = None,
        stop: list[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        extra: dict[str, Any] | None = None,
        purpose: CallPurpose = "answer",
    ) -> Completion:
        """Try the alias, then each fallback alias in order; raise NodeError when all fail. A `probe`
        is not streamed to `on_token`, and its trace record says `purpose: probe`."""
        token = _PURPOSE.set(purpose)
        try:
            return await self._complete(messages, prompt, stop, max_tokens, temperature, extra)
        finally:
            _PURPOSE.reset(token)

    async def _complete(
        self,
        messages: list[Message] | None,
        prompt: str | None,
        stop: list[str] | None,
        max_tokens: int | None,
        temperature: float | None,
        extra: dict[str, Any] | None,
    ) -> Completion:
        errors: list[str] = []
        kind: ErrorKind = "model_error"
        if draw := _drawn(self.node_id):
            temperature, extra = draw.temperature, {**(extra or {}), "seed": draw.seed}
        for alias in [self.alias, *self.models[self.alias].fallbacks]:
            spec = self.models[alias]
            request = build_request(
                spec,
                messages=messages,
                prompt=prompt,
                stop=stop,
                max_tokens=max_tokens,
                temperature=temperature,
                extra=extra,
            )
            try:
                return await self._with_retries(alias, spec, request)
            except ModelError as err:
                errors.append(f"{alias} ({spec.model}): {err.kind}: {err}")
                kind = err.kind if len(errors) == 1 else "model_error"
        raise NodeError("model call failed: " + "; then ".join(errors), kind=kind)

    def supports_tools(self) -> bool:
        """Whether the alias' model takes tools natively (scripted: when its script calls tools)."""
        check = getattr(self.client(self.alias), "supports_tools", None)
        return bool(check()) if check else False

    def capabilities(self) -> Capabilities | None:
        """What the alias' model supports (from litellm for providers); None when the client cannot say."""
        check = getattr(self.client(self.alias), "capabilities", None)
        return check() if check else None

    def supports(self, feature: str) -> bool | None:
        """Whether the alias' model has `feature` (`logprobs`, `function_calling`, `constrained`,
        `streaming`); None when its client cannot say."""
        capabilities = self.capabilities()
        return bool(getattr(capabilities, feature, False)) if capabilities else None

    async def complete_with_tools(
        self, *, messages: list[Message], tools: list[dict[str, Any]], max_tokens: int | None = None
    ) -> ToolReply:
        """One chat call offering `tools` (OpenAI function schemas); the reply's calls parsed."""
        completion = await self.complete(messages=messages, max_tokens=max_tokens, extra={"tools": tools})
        calls = [
            ToolCall(c["name"], dict(c.get("arguments") or {}), str(c.get("id", "")))
            for c in completion.tool_calls or []
        ]
        return ToolReply(text=completion.text, calls=calls, completion=completion)

    async def _with_retries(self, alias: str, spec: ModelSpec, request: Request) -> Completion:
        client = self.client(alias)
        cacheable = self.cache is not None and getattr(client, "cacheable", True)
        key = cache_key(spec, request, client) if cacheable else None
        if key and self.cache and (hit := self.cache.cache_get(key)):
            completion = Completion(
                text=hit["text"],
                input_tokens=0,
                output_tokens=0,
                cost_usd=0.0,
                top_logprobs=hit.get("top_logprobs"),
                tool_calls=hit.get("tool_calls"),
            )
            self._record(spec, request, completion, now(), 0.0, cache_hit=True)
            _price_hit(client, request, hit)
            if self.on_token and completion.text and _PURPOSE.get() == "answer":
                self.on_token(completion.text)  # a cached reply is replayed as one chunk
            return completion
        retry = Retry(spec)
        while True:
            started_at, start = now(), time.perf_counter()
            try:
                completion = await self._call(alias, request)
            except ModelError as err:
                took = time.perf_counter() - start - err.waited_s
                self._record(spec, request, None, started_at, took, error=f"{err.kind}: {err}", retry=retry, err=err)
                delay = retry.after(err)
                if delay is None:
                    raise
                await asyncio.sleep(delay)
                continue
            took = time.perf_counter() - start - completion.waited_s
            self._record(spec, request, completion, started_at, took, retry=retry)
            if key and self.cache:
                self.cache.cache_put(
                    key,
                    spec.model,
                    {
                        "text": completion.text,
                        "top_logprobs": completion.top_logprobs,
                        "tool_calls": completion.tool_calls,
                        "usage": {
                            "input_tokens": completion.input_tokens,
                            "output_tokens": completion.output_tokens,
                            "cost_usd": completion.cost_usd,
                        },
                    },
                )
            return completion

    async def _call(self, alias: str, request: Request) -> Completion:
        if not self.budget.limits_calls:
            self.budget.before_call()
            return await self._ask(alias, request)
        async with self.budget.lock:
            self.budget.before_call()
            completion = await self._ask(alias, request)
            self.budget.charge(completion.input_tokens + completion.output_tokens, completion.cost_usd)
            return completion

    async def _ask(self, alias: str, request: Request) -> Completion:
        """One call: streamed to `on_token` when someone consumes tokens and the client can stream."""
        client = self.client(alias)
        if self.on_token is None or _PURPOSE.get() != "answer":
            return await client.complete(request)
        if isinstance(client, StreamingClient) and hasattr(type(client), "stream"):
            # a wrapper that only forwards `stream` (by __getattr__) would skip its own `complete`
            return await client.stream(request, self.on_token)
        completion = await client.complete(request)
        if completion.text:
            self.on_token(completion.text)
        return completion

    def _record(
        self,
        spec: ModelSpec,
        request: Request,
        completion: Completion | None,
        started_at: str,
        latency_s: float,
        error: str | None = None,
        cache_hit: bool = False,
        retry: Retry | None = None,
        err: ModelError | None = None,
    ) -> None:
        waited = completion.waited_s if completion else err.waited_s if err else 0.0
        tokens_in = completion.input_tokens if completion else 0
        tokens_out = completion.output_tokens if completion else 0
        cost = completion.cost_usd if completion else 0.0
        if not self.budget.limits_calls:
            self.budget.charge(tokens_in + tokens_out, cost)
        self.calls.append(
            CallRecord(
                node=self.node_id,
                model=spec.model,
                request={**_recorded(request), **self.tag},
                response=completion.text if completion else None,
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                cost_usd=cost,
                latency_s=latency_s,
                cache_hit=cache_hit,
                error=error,
                started_at=started_at,
                attempt=retry.attempt if retry else 1,
                wait_s=round((retry.slept_s if retry else 0.0) + waited, 6),
            )
        )


def _recorded(request: Request) -> dict[str, Any]:
    """The request as the trace keeps it: a probe's says so (`purpose`); never part of the cache key."""
    body = request.as_json()
    if (purpose := _PURPOSE.get()) != "answer":
        body["purpose"] = purpose
    return body


def _price_hit(client: ModelClient, request: Request, hit: dict[str, Any]) -> None:
    """Tell a client that prices answers (the optimizer's meter, `cached_answer`) what a cached
    answer cost when it was made; the hit itself spends nothing. Entries cached before answers
    kept their usage have no price to tell."""
    usage, notify = hit.get("usage"), getattr(client, "cached_answer", None)
    if not isinstance(usage, dict) or notify is None:
        return
    notify(
        request,
        Completion(
            text=hit["text"],
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            cost_usd=float(usage.get("cost_usd") or 0.0),
        ),
    )


class Retry:
    """The retry policy of one call on one alias: what a failed attempt earns.

    Rate limits are waited out (`Retry-After`, else backoff) until `rate_limit_wait_s` has passed
    since the first one, and do not count against `retries`; server errors, timeouts and malformed
    replies get `retries` more attempts after exponential backoff with full jitter (`Retry-After`
    wins when sent); every other kind (auth, bad request, ...) is final at once.
    """

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.attempt = 1
        """The attempt being made (1: the first)."""
        self.slept_s = 0.0
        """The delay slept before the attempt being made."""
        self.failures = 0
        self.rate_limits = 0
        self.limited_since: float | None = None

    def after(self, err: ModelError) -> float | None:
        """Seconds to wait before the next attempt; None: `err` is final."""
        delay = self._delay(err)
        if delay is not None:
            self.attempt += 1
            self.slept_s = delay
        return delay

    def _delay(self, err: ModelError) -> float | None:
        spec = self.spec
        if err.kind == "rate_limit":
            clock = time.monotonic()
            self.limited_since = self.limited_since or clock
            delay = (
                err.retry_after_s if err.retry_after_s is not None else _jitter(spec.retry_backoff_s, self.rate_limits)
            )
            self.rate_limits += 1
            return delay if clock - self.limited_since + delay <= spec.rate_limit_wait_s else None
        if err.kind not in TRANSIENT or self.failures >= spec.retries:
            return None
        self.failures += 1
        if err.retry_after_s is not None:
            return min(err.retry_after_s, MAX_DELAY_S)
        return _jitter(spec.retry_backoff_s, self.failures - 1)


def _jitter(backoff_s: float, attempt: int) -> float:
    """Exponential backoff with full jitter: anywhere from 0 to `backoff_s * 2**attempt` (at most
    MAX_DELAY_S), so calls that failed together do not come back together."""
    return random.uniform(0.0, min(backoff_s * 2**attempt, MAX_DELAY_S))


class NoModel:
    """What `ctx.llm` is for nodes that call no model."""

    async def complete(self, **_: object) -> Completion:
        raise NodeError("this node type calls no model", kind="no_model")
