"""Register the built-in providers with litellm, so litellm-based tools (DSPy, for one)
can call `local/smollm2` and `scripted/PATH` by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from studio.flow.spec import ModelSpec
from studio.models.base import Completion, Message, ModelClient, Request
from studio.models.capabilities import import_litellm

PROVIDERS = ("local", "scripted")


def _request(kwargs: dict[str, Any]) -> Request:
    params = kwargs.get("optional_params") or {}
    stop = params.get("stop") or ()
    messages = tuple(Message(m["role"], str(m.get("content") or "")) for m in kwargs.get("messages") or [])
    return Request(
        messages=messages,
        temperature=float(params.get("temperature") or 0.0),
        max_tokens=int(params.get("max_tokens") or 256),
        stop=(stop,) if isinstance(stop, str) else tuple(stop),
    )


def _client(provider: str, model: str) -> ModelClient:
    from studio.models import client_for
    from studio.models.scripted import trust_user_models

    trust_user_models([f"{provider}/{model}"])  # the calling program's own path, as with --model
    return client_for(ModelSpec(model=f"{provider}/{model}"), Path.cwd())


def _response(litellm: Any, model: str, completion: Completion) -> Any:
    usage = litellm.Usage(
        prompt_tokens=completion.input_tokens,
        completion_tokens=completion.output_tokens,
        total_tokens=completion.input_tokens + completion.output_tokens,
    )
    choice = {
        "index": 0,
        "finish_reason": completion.finish_reason,
        "message": {"role": "assistant", "content": completion.text},
    }
    return litellm.ModelResponse(model=model, choices=[choice], usage=usage)


def _handler_class(litellm: Any) -> type:
    class Handler(litellm.CustomLLM):  # type: ignore[misc]
        """Serves one built-in provider through litellm's custom-provider hook."""

        def __init__(self, provider: str) -> None:
            super().__init__()
            self.provider = provider
            self.clients: dict[str, ModelClient] = {}

        async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
            model = str(kwargs["model"]).removeprefix(f"{self.provider}/")
            client = self.clients.get(model) or self.clients.setdefault(model, _client(self.provider, model))
            completion = await client.complete(_request(kwargs))
            return _response(litellm, f"{self.provider}/{model}", completion)

        def completion(self, *args: Any, **kwargs: Any) -> Any:
            import asyncio

            return asyncio.run(self.acompletion(*args, **kwargs))

    return Handler


def register() -> None:
    """Add `local` and `scripted` to litellm's provider map (idempotent)."""
    litellm = import_litellm()
    handler = _handler_class(litellm)
    present = {entry["provider"] for entry in litellm.custom_provider_map}
    for provider in PROVIDERS:
        if provider not in present:
            litellm.custom_provider_map.append({"provider": provider, "custom_handler": handler(provider)})
    litellm.utils.custom_llm_setup()
