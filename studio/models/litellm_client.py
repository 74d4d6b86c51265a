"""Every other provider, through litellm (imported lazily: it takes seconds)."""

from __future__ import annotations

import os
from typing import Any

from studio import secrets
from studio.flow.spec import ModelSpec
from studio.models.base import Completion, ModelError, Request

_ENV_PREFIX = "$env."
MAX_TOP_LOGPROBS_CHAT = 20
"""OpenAI-style providers refuse more alternatives per token than this."""
MAX_TOP_LOGPROBS_TEXT = 5


def import_litellm() -> Any:
    """Import litellm with its offline price map, so it never reaches for the network."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


def resolve_secret(value: str | None) -> str | None:
    """`$env.NAME` → the environment's value; only ever held in memory."""
    if value is None or not value.startswith(_ENV_PREFIX):
        return value
    name = value[len(_ENV_PREFIX) :]
    secret = secrets.reveal(name)
    if secret is None:
        raise ModelError("auth", f"environment variable {name} is not set (needed by api_key: {value})")
    return secret


def _error_kind(litellm: Any, err: Exception) -> str:
    table = [
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
    response = getattr(err, "response", None)
    headers = getattr(response, "headers", None) or {}
    value = headers.get("retry-after") if hasattr(headers, "get") else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class LiteLLMModel:
    """A provider model string such as `openai/gpt-4o-mini` or `ollama/llama3`."""

    def __init__(self, spec: ModelSpec) -> None:
        self.name = spec.model
        self.spec = spec

    def _arguments(self, request: Request) -> dict[str, Any]:
        extra = {k: v for k, v in request.extra.items() if k != "top_logprobs"}
        arguments: dict[str, Any] = {
            "model": self.spec.model,
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
        api_key = resolve_secret(self.spec.api_key)
        if api_key:
            arguments["api_key"] = api_key
        if self.spec.api_base:
            arguments["api_base"] = self.spec.api_base
        return arguments

    async def complete(self, request: Request) -> Completion:
        litellm = import_litellm()
        arguments = self._arguments(request)
        try:
            if request.prompt is not None:
                response = await litellm.atext_completion(prompt=request.prompt, **arguments)
                text = response.choices[0].text or ""
            else:
                messages = [m.as_dict() for m in request.messages]
                response = await litellm.acompletion(messages=messages, **arguments)
                text = response.choices[0].message.content or ""
        except Exception as err:
            message = f"{type(err).__name__}: {err}"
            if arguments.get("api_key"):
                message = message.replace(arguments["api_key"], "***")
            raise ModelError(_error_kind(litellm, err), message, _retry_after(err)) from None
        return self._completion(litellm, response, text)

    def _completion(self, litellm: Any, response: Any, text: str) -> Completion:
        usage = getattr(response, "usage", None)
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        if self.spec.input_cost_per_token is not None or self.spec.output_cost_per_token is not None:
            cost = tokens_in * (self.spec.input_cost_per_token or 0) + tokens_out * (
                self.spec.output_cost_per_token or 0
            )
        else:
            try:
                cost = float(litellm.completion_cost(completion_response=response) or 0.0)
            except Exception:
                cost = 0.0
        reason = str(getattr(response.choices[0], "finish_reason", "stop") or "stop")
        return Completion(
            text=text, input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=cost, finish_reason=reason
        )
