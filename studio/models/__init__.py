"""Model clients by model string: `local/...` and `scripted` built in, the rest via litellm."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path

from studio.errors import SpecError
from studio.flow.spec import ModelSpec
from studio.models.base import Completion, Message, ModelClient, ModelError, Request

__all__ = ["ClientHook", "Completion", "Message", "ModelClient", "ModelError", "Request", "client_for", "client_hooks"]

LOCAL_MODELS = ("local/smollm2",)


ClientHook = Callable[[ModelClient, ModelSpec], ModelClient]
client_hooks: ContextVar[tuple[ClientHook, ...]] = ContextVar("flowstudio_client_hooks", default=())
"""Wrappers applied to every client built in this context (the optimizer meters calls with one)."""


def client_for(spec: ModelSpec, base_dir: Path) -> ModelClient:
    """The client that serves an alias, wrapped by the active `client_hooks`."""
    client = _client(spec, base_dir)
    for hook in client_hooks.get():
        client = hook(client, spec)
    return client


def _client(spec: ModelSpec, base_dir: Path) -> ModelClient:
    """Builds nothing heavy: models load on their first call."""
    if spec.model == "scripted" or spec.model.startswith("scripted/"):
        from studio.models.scripted import from_spec

        return from_spec(spec, base_dir)
    if spec.model.startswith("local/"):
        if spec.model not in LOCAL_MODELS:
            raise SpecError(f"unknown local model {spec.model!r}; built in: {', '.join(LOCAL_MODELS)}", field="model")
        from studio.models.local import LocalModel

        return LocalModel()
    from studio.models.litellm_client import LiteLLMModel

    return LiteLLMModel(spec)
