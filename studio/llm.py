"""A node's model: an alias' client bound to its settings, recording every call."""

from __future__ import annotations

import time

from studio.errors import NodeError
from studio.models.base import Completion, Message, ModelClient, ModelError, Request
from studio.spec import ModelSpec
from studio.store.base import CallRecord, now

DEFAULT_MAX_TOKENS = 256


class BoundLLM:
    """Applies alias settings to each call and appends a CallRecord for the trace."""

    def __init__(self, node_id: str, alias: str, spec: ModelSpec, client: ModelClient, calls: list[CallRecord]) -> None:
        self.node_id = node_id
        self.alias = alias
        self.spec = spec
        self.client = client
        self.calls = calls

    def request(
        self,
        *,
        messages: list[Message] | None = None,
        prompt: str | None = None,
        stop: list[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Request:
        """The request a call sends: node arguments first, then alias settings."""
        if temperature is None:
            temperature = self.spec.temperature if self.spec.temperature is not None else 0.0
        return Request(
            messages=tuple(messages or ()),
            prompt=prompt,
            temperature=temperature,
            max_tokens=max_tokens or self.spec.max_tokens or DEFAULT_MAX_TOKENS,
            stop=tuple(dict.fromkeys([*(stop or []), *(self.spec.stop or [])])),
        )

    async def complete(
        self,
        *,
        messages: list[Message] | None = None,
        prompt: str | None = None,
        stop: list[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion:
        request = self.request(
            messages=messages, prompt=prompt, stop=stop, max_tokens=max_tokens, temperature=temperature
        )
        started_at, start = now(), time.perf_counter()
        try:
            completion = await self.client.complete(request)
        except ModelError as err:
            self._record(request, None, started_at, time.perf_counter() - start, error=f"{err.kind}: {err}")
            raise NodeError(f"model {self.spec.model} failed: {err}", kind=err.kind) from None
        self._record(request, completion, started_at, time.perf_counter() - start)
        return completion

    def _record(
        self,
        request: Request,
        completion: Completion | None,
        started_at: str,
        latency_s: float,
        error: str | None = None,
    ) -> None:
        self.calls.append(
            CallRecord(
                node=self.node_id,
                model=self.spec.model,
                request=request.as_json(),
                response=completion.text if completion else None,
                input_tokens=completion.input_tokens if completion else 0,
                output_tokens=completion.output_tokens if completion else 0,
                cost_usd=completion.cost_usd if completion else 0.0,
                latency_s=latency_s,
                error=error,
                started_at=started_at,
            )
        )


class NoModel:
    """What `ctx.llm` is for nodes that call no model."""

    async def complete(self, **_: object) -> Completion:
        raise NodeError("this node type calls no model", kind="no_model")
