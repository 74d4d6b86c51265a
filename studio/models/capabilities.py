"""What a model can do, asked of litellm (never guessed): its parameters, function calling, logprobs.

`local/smollm2` and `scripted` answer for themselves; every other model string is looked up in
litellm's offline tables (`get_supported_openai_params`, `supports_function_calling`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

CONSTRAINED_PARAM = "response_format"
"""The OpenAI parameter a constrained (JSON Schema) answer is asked with."""


@dataclass(frozen=True)
class Capabilities:
    """What one model string supports."""

    provider: str
    """litellm's provider name (`openai`, `anthropic`, `ollama`, ...), or `local` / `scripted`."""
    params: frozenset[str]
    """The OpenAI-style parameters the provider takes; anything else is never sent."""
    function_calling: bool
    """The model picks tools natively (litellm's `supports_function_calling`)."""
    streaming: bool = True
    """Replies can arrive token by token."""

    @property
    def logprobs(self) -> bool:
        """Log-probabilities of the generated tokens (and their top alternatives)."""
        return "logprobs" in self.params

    @property
    def prefill(self) -> bool:
        """A chat whose last turn is the assistant's is continued from it (Anthropic's Messages API),
        while a completion-style prompt is sent as a user message and answered afresh."""
        return self.provider == "anthropic"

    @property
    def constrained(self) -> bool:
        """An answer constrained to a JSON Schema (`response_format`)."""
        return CONSTRAINED_PARAM in self.params

    def names(self) -> list[str]:
        """The capabilities in words, for `models check` and `validate`."""
        flags = {
            "logprobs": self.logprobs,
            "function-calling": self.function_calling,
            "constrained-output": self.constrained,
            "streaming": self.streaming,
        }
        return [name for name, present in flags.items() if present]


def import_litellm() -> Any:
    """Import litellm with its offline price map, so it never reaches for the network."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


def provider_of(model: str) -> str:
    """litellm's provider of a model string; `unknown` when litellm cannot tell."""
    try:
        return str(import_litellm().get_llm_provider(model)[1])
    except Exception:
        return "unknown"


@lru_cache(maxsize=256)
def from_litellm(model: str) -> Capabilities:
    """The capabilities litellm's offline tables give `model`."""
    litellm = import_litellm()
    provider = provider_of(model)
    bare = model.split("/", 1)[1] if model.startswith(f"{provider}/") else model
    params: Any = None
    try:
        params = litellm.get_supported_openai_params(model=bare, custom_llm_provider=provider)
    except Exception:
        params = None
    try:
        tools = bool(litellm.supports_function_calling(model=model))
    except Exception:
        tools = False
    supported = frozenset(params or ())
    return Capabilities(provider, supported, tools and "tools" in supported, "stream" in supported)


LOCAL = Capabilities(
    "local",
    frozenset({"temperature", "max_tokens", "stop", "seed", "logprobs", "top_logprobs", "stream"}),
    function_calling=False,
)
"""The embedded model: llama.cpp gives logprobs; it has no tool-call template."""


def scripted(function_calling: bool) -> Capabilities:
    """The scripted model: text replies, tool calls where its script has them, no logprobs."""
    params = {"temperature", "max_tokens", "stop", "seed", "stream"} | ({"tools"} if function_calling else set())
    return Capabilities("scripted", frozenset(params), function_calling)
