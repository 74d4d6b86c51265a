"""Everything about one step: inputs, outputs, the prompt messages sent, model, tokens, cost, latency."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from studio.store.base import CallRecord, StepRecord
from studio.viewer.trace import Trace, seconds


@dataclass(frozen=True)
class Message:
    """One rendered message of a prompt (`prompt` for completion-style requests)."""

    role: str
    content: str


@dataclass(frozen=True)
class CallView:
    """One model call, ready to show."""

    model: str
    messages: tuple[Message, ...]
    settings: dict[str, Any]
    response: str | None
    input_tokens: int
    output_tokens: int
    cost_usd: float
    latency_s: float
    cache_hit: bool
    error: str | None


@dataclass(frozen=True)
class StepDetail:
    """A step and its model calls."""

    step: StepRecord
    seconds: float | None
    calls: tuple[CallView, ...]

    @property
    def tokens(self) -> int:
        return sum(c.input_tokens + c.output_tokens for c in self.calls)

    @property
    def cost_usd(self) -> float:
        return sum(c.cost_usd for c in self.calls)


def messages_of(request: dict[str, Any]) -> tuple[Message, ...]:
    """The messages a request carried: chat messages, or the single completion prompt."""
    if isinstance(request.get("prompt"), str):
        return (Message("prompt", request["prompt"]),)
    found = []
    for message in request.get("messages") or []:
        if isinstance(message, dict):
            found.append(Message(str(message.get("role", "?")), str(message.get("content", ""))))
    return tuple(found)


def call_view(call: CallRecord) -> CallView:
    """A stored call with its request split into messages and settings."""
    settings = {k: v for k, v in call.request.items() if k not in ("messages", "prompt")}
    return CallView(
        model=call.model,
        messages=messages_of(call.request),
        settings=settings,
        response=call.response,
        input_tokens=call.input_tokens,
        output_tokens=call.output_tokens,
        cost_usd=call.cost_usd,
        latency_s=call.latency_s,
        cache_hit=call.cache_hit,
        error=call.error,
    )


def step_detail(trace: Trace, name: str) -> StepDetail | None:
    """The last step recorded as `name` with its calls; None if there is none."""
    step = trace.step(name)
    if step is None:
        return None
    calls = tuple(call_view(c) for c in trace.calls_of(name))
    return StepDetail(step=step, seconds=seconds(step.started_at, step.ended_at), calls=calls)
