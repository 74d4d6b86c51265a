"""Every other provider, through litellm (imported lazily: it takes seconds)."""

from __future__ import annotations

import asyncio
import json
import os
import re
from functools import lru_cache
from typing import Any

from studio import secrets
from studio.errors import ErrorKind
from studio.flow.spec import ModelSpec
from studio.models.base import Completion, ModelError, Request, TokenSink
from studio.models.capabilities import Capabilities, from_litellm, import_litellm
from studio.models.limiter import Limiter, Limits, Slot, limiter_for, turn

_ENV_PREFIX = "$env."
MAX_TOP_LOGPROBS_CHAT = 20
"""OpenAI-style providers refuse more alternatives per token than this."""
MAX_TOP_LOGPROBS_TEXT = 5
CLIENT_PARAMS = frozenset(
    {
        "api_base",
        "api_key",
        "api_version",
        "base_url",
        "default_headers",
        "deployment_id",
        "extra_headers",
        "max_retries",
        "organization",
        "request_timeout",
        "timeout",
    }
)
"""OpenAI parameters about the connection, not the generation: never filtered."""
NO_KEY_NEEDED = "no-key"
"""Sent as the key to a self-hosted server (`api_base`) when none is configured: the client
libraries insist on one, the server ignores it."""
_SECRETISH = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,}|[A-Za-z0-9_\-]{32,})\b")


def resolve_secret(value: str | None) -> str | None:
    """`$env.NAME` → the environment's value; only ever held in memory."""
    if value is None or not value.startswith(_ENV_PREFIX):
        return value
    name = value[len(_ENV_PREFIX) :]
    secret = secrets.reveal(name)
    if secret is None:
        raise ModelError("auth", f"environment variable {name} is not set (needed by api_key: {value})")
    return secret


def _error_kind(litellm: Any, err: Exception) -> ErrorKind:
    table: list[tuple[str, ErrorKind]] = [
        ("ContextWindowExceededError", "context_overflow"),
        ("AuthenticationError", "auth"),
        ("PermissionDeniedError", "auth"),
        ("RateLimitError", "rate_limit"),
        ("Timeout", "timeout"),
        ("BadRequestError", "bad_request"),
        ("InternalServerError", "server"),
        ("ServiceUnavailableError", "server"),
        ("APIConnectionError", "server"),
    ]
    for name, kind in table:
        cls = getattr(litellm, name, None)
        if cls is not None and isinstance(err, cls):
            return kind
    return "server"


def _retry_after(err: Exception) -> float | None:
    """Seconds from a 429's Retry-After header (seconds or `retry-after-ms`), else None."""
    response = getattr(err, "response", None)
    headers: Any = getattr(response, "headers", None) or getattr(err, "litellm_response_headers", None) or {}
    if not hasattr(headers, "get"):
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        try:
            if value is not None:
                return float(value) * scale
        except ValueError:
            continue
    return None


def mask(text: str, secrets: list[str]) -> str:
    """`text` with every known secret, and anything shaped like a key, replaced by ***."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _SECRETISH.sub(lambda m: m.group(0)[:3] + "***" if m.group(0).startswith("sk-") else "***", text)


def _connection_error(litellm: Any, err: Exception) -> bool:
    connection = getattr(litellm, "APIConnectionError", None)
    text = str(err).lower()
    return (connection is not None and isinstance(err, connection)) or "connection error" in text


_OVERFLOW = re.compile(r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)")


class LiteLLMModel:
    """A provider model string such as `openai/gpt-4o-mini` or `ollama/llama3`."""

    def __init__(self, spec: ModelSpec) -> None:
        self.name = spec.model
        self.spec = spec
        self.dropped: set[str] = set()
        """Parameters left out of calls because the provider does not take them."""
        limits = Limits(spec.rpm, spec.tpm, spec.max_concurrency)
        self.limiter: Limiter | None = limiter_for(spec.model, spec.api_base, limits)
        """The process' limiter of this model (shared by every client of it); None: calls go at once."""

    def capabilities(self) -> Capabilities:
        """What litellm's tables say this model string supports."""
        return from_litellm(self.spec.model)

    def supports_tools(self) -> bool:
        """litellm's `supports_function_calling` for this model."""
        return self.capabilities().function_calling

    def address(self) -> str:
        """Where calls go: `api_base`, else litellm's default for the provider."""
        if self.spec.api_base:
            return self.spec.api_base
        try:
            base = import_litellm().get_llm_provider(self.spec.model)[3]
        except Exception:
            base = None
        return str(base or f"the {self.capabilities().provider} API")

    def key_variable(self) -> str | None:
        """The environment variable the key comes from: the alias' `$env.NAME`, else the provider's."""
        if self.spec.api_key and self.spec.api_key.startswith(_ENV_PREFIX):
            return self.spec.api_key[len(_ENV_PREFIX) :]
        missing = self._missing_keys()
        if missing:
            return missing[0]
        provider = self.capabilities().provider
        return f"{provider.upper()}_API_KEY"

    def _missing_keys(self) -> list[str]:
        """The provider's key variables that the environment lacks (litellm's `validate_environment`)."""
        return _missing_keys(self.spec.model, self.spec.api_base, _key_env())

    def _credentials(self) -> str | None:
        """The key to send: `$env.NAME`, else None (litellm reads the provider's variable).

        Raises `auth` when the provider needs a key that no variable holds, before any call.
        """
        api_key = resolve_secret(self.spec.api_key)
        if api_key:
            return api_key
        missing = self._missing_keys()
        if missing and self.spec.api_base:
            return NO_KEY_NEEDED
        if missing:
            names = " or ".join(missing)
            raise ModelError(
                "auth",
                f"{self.spec.model}: no API key: set {names} in the environment "
                f"(or api_key: $env.NAME on the model alias)",
            )
        return None

    def _arguments(self, request: Request) -> dict[str, Any]:
        """The litellm call's keyword arguments, without any parameter the provider lacks."""
        extra = {k: v for k, v in request.extra.items() if k != "top_logprobs"}
        arguments: dict[str, Any] = {
            "model": self.spec.model,
            "max_retries": 0,  # the binding retries, recording each attempt and honouring Retry-After
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            **self.spec.params,
            **extra,
        }
        top = request.extra.get("top_logprobs")
        if top:
            chat = request.prompt is None
            limit = MAX_TOP_LOGPROBS_CHAT if chat else MAX_TOP_LOGPROBS_TEXT
            arguments.update(
                {"logprobs": True, "top_logprobs": min(top, limit)} if chat else {"logprobs": min(top, limit)}
            )
        if request.stop:
            arguments["stop"] = list(request.stop)
        arguments = self.supported(arguments)
        api_key = self._credentials()
        if api_key:
            arguments["api_key"] = api_key
        if self.spec.api_base:
            arguments["api_base"] = self.spec.api_base
        return arguments

    def supported(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """`arguments` less the OpenAI parameters litellm says this provider does not take."""
        openai_params = set(import_litellm().OPENAI_CHAT_COMPLETION_PARAMS) - CLIENT_PARAMS
        allowed = self.capabilities().params
        kept = {}
        for name, value in arguments.items():
            if name in openai_params and name not in allowed:
                self.dropped.add(name)
                continue
            kept[name] = value
        return kept

    async def complete(self, request: Request) -> Completion:
        """One call, after its turn under the model's limiter, ended after `timeout_s`."""
        litellm = import_litellm()
        arguments = self._arguments(request)
        async with turn(self.limiter, _estimate(request)) as slot:
            try:
                response = await asyncio.wait_for(self._send(litellm, request, arguments), self.spec.timeout_s)
            except Exception as err:
                raise self._failed(litellm, err, request, arguments, slot) from None
            choice = response.choices[0]
            if request.prompt is not None:
                text, calls = choice.text or "", None
            else:
                text, calls = choice.message.content or "", _tool_calls(choice.message)
            completion = self._completion(litellm, response, text)
            headers = limit_headers(response)
            slot.succeeded(completion.input_tokens + completion.output_tokens, announced_rpm(headers))
        return _with(
            completion,
            tool_calls=calls,
            top_logprobs=top_logprobs(getattr(choice, "logprobs", None)),
            waited_s=slot.waited_s,
            limit_headers=headers,
        )

    async def _send(self, litellm: Any, request: Request, arguments: dict[str, Any]) -> Any:
        if request.prompt is not None:
            return await litellm.atext_completion(prompt=request.prompt, **arguments)
        return await litellm.acompletion(messages=[m.as_dict() for m in request.messages], **arguments)

    def _failed(
        self, litellm: Any, err: Exception, request: Request, arguments: dict[str, Any], slot: Slot
    ) -> ModelError:
        """The ModelError of a failed attempt; a 429 is told to the limiter."""
        if isinstance(err, TimeoutError):
            message = f"{self.spec.model}: no answer from {self.address()} within {self.spec.timeout_s:g} s (timeout_s)"
            error = ModelError("timeout", message)
        else:
            error = self._error(litellm, err, request, arguments)
        if error.kind == "rate_limit":
            headers = getattr(err, "litellm_response_headers", None) or {}
            slot.limited(error.retry_after_s, announced_rpm({str(k): str(v) for k, v in dict(headers).items()}))
        error.waited_s = slot.waited_s
        return error

    async def stream(self, request: Request, on_text: TokenSink) -> Completion:
        """litellm's `stream=True`: each text delta to `on_text`; tools and logprobs are answered whole."""
        if request.extra.get("top_logprobs") or request.extra.get("tools") or not self.capabilities().streaming:
            completion = await self.complete(request)
            if completion.text:
                on_text(completion.text)
            return completion
        litellm = import_litellm()
        arguments = {**self._arguments(request), "stream": True}
        if "stream_options" in self.capabilities().params:
            arguments["stream_options"] = {"include_usage": True}
        pieces: list[str] = []
        chunks: list[Any] = []
        timeout = self.spec.timeout_s
        async with turn(self.limiter, _estimate(request)) as slot:
            try:
                stream = await asyncio.wait_for(self._send(litellm, request, arguments), timeout)
                chunk_of = stream.__aiter__()
                while True:  # timeout_s bounds the wait for each piece: a long reply may stream on
                    try:
                        chunk = await asyncio.wait_for(anext(chunk_of), timeout)
                    except StopAsyncIteration:
                        break
                    chunks.append(chunk)
                    for choice in getattr(chunk, "choices", None) or []:
                        delta = getattr(choice, "delta", None)
                        text = getattr(delta, "content", None) if delta is not None else getattr(choice, "text", None)
                        if text:
                            pieces.append(text)
                            on_text(text)
            except Exception as err:
                raise self._failed(litellm, err, request, arguments, slot) from None
            completion = self._streamed(litellm, request, chunks, "".join(pieces))
            slot.succeeded(completion.input_tokens + completion.output_tokens)
        return _with(completion, waited_s=slot.waited_s)

    def _streamed(self, litellm: Any, request: Request, chunks: list[Any], text: str) -> Completion:
        """The Completion of a finished stream: litellm rebuilds usage (and so the cost) from the chunks."""
        if request.prompt is None:
            messages = [m.as_dict() for m in request.messages]
            try:
                response = litellm.stream_chunk_builder(chunks, messages=messages)
            except Exception:
                response = None
            if response is not None and getattr(response, "choices", None):
                return self._completion(litellm, response, text)
        usage = next((c.usage for c in reversed(chunks) if getattr(c, "usage", None)), None)
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        reasons = [getattr(ch, "finish_reason", None) for c in chunks for ch in getattr(c, "choices", None) or []]
        reason = next((r for r in reversed(reasons) if r), "stop")
        return Completion(text, tokens_in, tokens_out, self._cost(litellm, tokens_in, tokens_out), str(reason))

    def _error(self, litellm: Any, err: Exception, request: Request, arguments: dict[str, Any]) -> ModelError:
        """A ModelError by kind, naming what helps: the key variable, the address, the token counts."""
        kind = _error_kind(litellm, err)
        detail = f"{type(err).__name__}: {err}"
        if kind == "auth":
            detail = f"{self.spec.model}: the provider rejected the credentials (check {self.key_variable()}): {err}"
        elif kind == "context_overflow":
            detail = f"{self.spec.model}: {self._overflow(litellm, err, request)}"
        elif kind in ("server", "timeout") and _connection_error(litellm, err):
            detail = f"{self.spec.model}: cannot reach {self.address()}: {type(err).__name__}: {err}"
        elif kind == "rate_limit":
            detail = f"{self.spec.model}: rate limited by {self.address()}: {err}"
        secrets = [str(arguments.get("api_key") or "")]
        variable = self.key_variable()
        if variable and os.environ.get(variable):
            secrets.append(os.environ[variable])
        return ModelError(kind, mask(detail, secrets), _retry_after(err))

    def _overflow(self, litellm: Any, err: Exception, request: Request) -> str:
        """The context overflow in numbers: the prompt's tokens, the reply's cap, the window."""
        found = _OVERFLOW.search(str(err))
        if found:
            prompt_tokens, window = int(found.group(1)), int(found.group(2))
        else:
            try:
                if request.prompt is not None:
                    prompt_tokens = int(litellm.token_counter(model=self.spec.model, text=request.prompt))
                else:
                    messages = [m.as_dict() for m in request.messages]
                    prompt_tokens = int(litellm.token_counter(model=self.spec.model, messages=messages))
            except Exception:
                prompt_tokens = 0
            try:
                window = int(litellm.get_model_info(self.spec.model).get("max_input_tokens") or 0)
            except Exception:
                window = 0
        known = f"a context window of {window} tokens" if window else "its context window"
        return (
            f"context overflow: the prompt has {prompt_tokens} tokens (plus up to {request.max_tokens} "
            f"for the reply), more than {known}; shorten the prompt or use a model with a longer context"
        )

    def _cost(self, litellm: Any, tokens_in: int, tokens_out: int, response: Any = None) -> float:
        """USD of one call: the alias' prices when set, else litellm's offline price map."""
        if self.spec.input_cost_per_token is not None or self.spec.output_cost_per_token is not None:
            return tokens_in * (self.spec.input_cost_per_token or 0) + tokens_out * (
                self.spec.output_cost_per_token or 0
            )
        hidden = getattr(response, "_hidden_params", None) or {}
        if hidden.get("response_cost") is not None:  # litellm priced the reply already
            return float(hidden["response_cost"])
        if not _priced(self.spec.model):
            return 0.0
        try:
            if response is not None:
                return float(litellm.completion_cost(completion_response=response) or 0.0)
            prices = litellm.cost_per_token(
                model=self.spec.model, prompt_tokens=tokens_in, completion_tokens=tokens_out
            )
            return float(sum(prices))
        except Exception:
            return 0.0

    def _completion(self, litellm: Any, response: Any, text: str) -> Completion:
        usage = getattr(response, "usage", None)
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = self._cost(litellm, tokens_in, tokens_out, response)
        reason = str(getattr(response.choices[0], "finish_reason", "stop") or "stop")
        return Completion(
            text=text, input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=cost, finish_reason=reason
        )


def _estimate(request: Request) -> int:
    """Tokens a call may use, for the `tpm` limit: about four characters a prompt token, plus the reply's cap."""
    return len(request.text) // 4 + request.max_tokens


RATE_LIMIT_HEADER = re.compile(r"(ratelimit|retry-after)", re.IGNORECASE)
_PROVIDER_PREFIX = "llm_provider-"


def limit_headers(response: Any) -> dict[str, str] | None:
    """The rate-limit headers (`x-ratelimit-*`, `anthropic-ratelimit-*`, `retry-after`) of a litellm
    reply, as the provider named them; None when it sent none."""
    hidden = getattr(response, "_hidden_params", None) or {}
    headers = hidden.get("additional_headers") or {}
    found: dict[str, str] = {}
    for name, value in headers.items():
        bare = str(name).removeprefix(_PROVIDER_PREFIX)
        if RATE_LIMIT_HEADER.search(bare):
            found[bare] = str(value)
    return dict(sorted(found.items())) or None


ANNOUNCED_LIMITS = ("x-ratelimit-limit-requests", "anthropic-ratelimit-requests-limit")
"""Headers in which OpenAI- and Anthropic-style providers announce their requests per minute."""


def announced_rpm(headers: dict[str, str] | None) -> float | None:
    """The requests-per-minute limit a provider announced in its headers; None when it did not."""
    for name in ANNOUNCED_LIMITS:
        value = (headers or {}).get(name)
        try:
            if value is not None and float(value) > 0:
                return float(value)
        except ValueError:
            continue
    return None


@lru_cache(maxsize=256)
def _priced(model: str) -> bool:
    """Whether litellm's offline price map knows `model` (pricing an unknown one costs milliseconds)."""
    try:
        info = import_litellm().get_model_info(model)
    except Exception:
        return False
    return info.get("input_cost_per_token") is not None or info.get("output_cost_per_token") is not None


def _key_env() -> tuple[tuple[str, str], ...]:
    """The environment's key-like variables: what `_missing_keys` depends on."""
    return tuple(sorted((k, v) for k, v in os.environ.items() if "KEY" in k or "TOKEN" in k or "AZURE" in k))


@lru_cache(maxsize=128)
def _missing_keys(model: str, api_base: str | None, environment: tuple[tuple[str, str], ...]) -> list[str]:
    try:
        found = import_litellm().validate_environment(model, api_base=api_base)
    except Exception:
        return []
    return [k for k in found.get("missing_keys") or [] if "KEY" in k or "TOKEN" in k]


def _with(completion: Completion, **fields: Any) -> Completion:
    from dataclasses import replace

    return replace(completion, **{k: v for k, v in fields.items() if v})


def _tool_calls(message: Any) -> list[dict[str, Any]] | None:
    """`{"id", "name", "arguments"}` per function call in a chat reply; None when there are none."""
    calls = getattr(message, "tool_calls", None) or []
    found = []
    for call in calls:
        function = getattr(call, "function", None)
        raw = getattr(function, "arguments", None) or "{}"
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else dict(raw)
        except json.JSONDecodeError:
            raise ModelError("bad_json", f"tool call arguments are not JSON: {raw[:200]}") from None
        found.append(
            {
                "id": str(getattr(call, "id", "") or ""),
                "name": str(getattr(function, "name", "")),
                "arguments": arguments,
            }
        )
    return found or None


def _as_dict(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump()
    return value


def top_logprobs(logprobs: Any) -> list[dict[str, float]] | None:
    """Token → logprob per generated position, from chat (`content`) or text (`top_logprobs`) logprobs."""
    data = _as_dict(logprobs)
    if not isinstance(data, dict):
        return None
    content = data.get("content")
    if isinstance(content, list) and content:
        from studio.models.local import _top_logprobs

        return _top_logprobs({"logprobs": {"content": [_as_dict(c) for c in content]}})
    legacy = data.get("top_logprobs")
    if isinstance(legacy, list) and legacy:
        return [{str(k): float(v) for k, v in (p or {}).items()} for p in legacy]
    return None
