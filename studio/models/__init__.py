"""Model clients by model string: `local/...` and `scripted` built in, the rest via litellm."""

from __future__ import annotations

from pathlib import Path

from studio.errors import SpecError
from studio.models.base import Completion, Message, ModelClient, ModelError, Request
from studio.spec import ModelSpec

__all__ = ["Completion", "Message", "ModelClient", "ModelError", "Request", "client_for"]

LOCAL_MODELS = ("local/smollm2",)


def client_for(spec: ModelSpec, base_dir: Path) -> ModelClient:
    """The client that serves an alias. Builds nothing heavy: models load on first call."""
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
