"""The model-client interface every provider implements."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from studio.errors import ErrorKind

Role = Literal["system", "user", "assistant"]
TokenSink = Callable[[str], None]
"""Receives each piece of a reply's text as it arrives; the pieces join to the whole text."""


@dataclass(frozen=True)
class Message:
    """One chat message: a role and its text."""

    role: Role
    content: str

    def as_dict(self) -> dict[str, str]:
        """The message as the OpenAI chat format writes it."""
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class Request:
    """One call to a model: chat `messages`, or a completion-style `prompt`."""

    messages: tuple[Message, ...] = ()
    prompt: str | None = None
    temperature: float = 0.0
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """All text sent to the model, as scripted rules and token counts see it."""
        if self.prompt is not None:
            return self.prompt
        return "\n".join(m.content for m in self.messages)

    def as_json(self) -> dict[str, Any]:
        """The request as JSON (what the LLM cache key and the trace hold)."""
        body: dict[str, Any] = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stop": list(self.stop),
        }
        if self.prompt is not None:
            body["prompt"] = self.prompt
        else:
            body["messages"] = [m.as_dict() for m in self.messages]
        if self.extra:
            body["extra"] = self.extra
        return body


@dataclass(frozen=True)
class Completion:
    """A model's reply with its token counts, cost and latency."""

    text: str
    input_tokens: int
    output_tokens: int
    cost_usd: float = 0.0
    finish_reason: str = "stop"
    tool_calls: list[dict[str, Any]] | None = None
    """Function calls the model asked for: `{"id", "name", "arguments"}` each (tools offered via
    `extra={"tools": [...]}`)."""
    top_logprobs: list[dict[str, float]] | None = None
    """Per generated position, the most likely tokens and their natural-log probabilities.

    Only filled when the request asked for them (`extra={"top_logprobs": N}`) and the
    provider can give them; None otherwise.
    """
    waited_s: float = 0.0
    """Seconds the call waited for its turn under the model's rate limiter before it went out."""
    limit_headers: dict[str, str] | None = None
    """The rate-limit headers the provider sent with the reply (`x-ratelimit-*`, `retry-after`)."""


class ModelError(Exception):
    """A provider call failed; `kind` decides whether it is retried."""

    def __init__(
        self, kind: ErrorKind, message: str, retry_after_s: float | None = None, *, waited_s: float = 0.0
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after_s = retry_after_s
        self.waited_s = waited_s
        """Seconds the call waited under the model's rate limiter before it went out."""


class ModelClient(Protocol):
    """Anything that answers a `Request` with a `Completion`."""

    name: str

    async def complete(self, request: Request) -> Completion:
        """Answer one request; raises ModelError."""


@runtime_checkable
class StreamingClient(Protocol):
    """A client that can also hand out a reply piece by piece as it is generated."""

    name: str

    async def complete(self, request: Request) -> Completion: ...

    async def stream(self, request: Request, on_text: TokenSink) -> Completion:
        """Call `on_text` with each piece of the reply as it arrives; return the whole Completion.

        Requests a stream cannot serve (tool calls, logprobs) are answered whole, as one piece.
        """
        ...
