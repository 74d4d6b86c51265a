"""The models a person picks from: the built-in ones, then the providers litellm knows and their
chat models, read from litellm's offline price map (a JSON file in its package) without importing
litellm, which takes seconds. Any other `provider/model` string still works: pickers accept typing."""

from __future__ import annotations

import importlib.util
import json
from functools import lru_cache
from pathlib import Path

from studio.models import LOCAL_MODELS

LOCAL = "local"
SCRIPTED = "scripted"
BUILT_IN: dict[str, tuple[str, ...]] = {LOCAL: LOCAL_MODELS, SCRIPTED: (SCRIPTED,)}
"""The embedded model and the scripted one: no key, no network."""
FIRST = ("openai", "anthropic", "gemini", "mistral", "groq", "ollama", "deepseek", "xai", "together_ai", "openrouter")
"""The providers listed right after the built-in ones; the rest follow by name."""
COMMON: dict[str, tuple[str, ...]] = {
    "openai": ("openai/gpt-4o-mini", "openai/gpt-4o", "openai/gpt-4.1-mini", "openai/gpt-4.1"),
    "anthropic": ("anthropic/claude-haiku-4-5", "anthropic/claude-sonnet-4-5"),
    "gemini": ("gemini/gemini-2.5-flash", "gemini/gemini-2.5-pro"),
    "mistral": ("mistral/mistral-small-latest", "mistral/mistral-large-latest"),
    "ollama": ("ollama/llama3.1", "ollama/mistral"),
}
"""A few well-known models of each big provider, offered first (and all there is without litellm's map)."""
PRICE_MAP = "model_prices_and_context_window_backup.json"


def provider_of(model: str) -> str:
    """The provider a model string names (`local`, `scripted`, else its prefix before `/`)."""
    if model == SCRIPTED or model.startswith(SCRIPTED + "/"):
        return SCRIPTED
    return model.split("/", 1)[0] if "/" in model else ""


def providers() -> list[str]:
    """Built-in first, then the well-known providers, then every other provider litellm's map names."""
    known = set(_chat_models()) | set(COMMON)
    return [*BUILT_IN, *[p for p in FIRST if p in known], *sorted(known - set(FIRST) - set(BUILT_IN))]


def common() -> list[str]:
    """The built-in models, then a few well-known ones of each big provider: a short list to pick from."""
    return [*[m for models in BUILT_IN.values() for m in models], *[m for models in COMMON.values() for m in models]]


def models_of(provider: str) -> list[str]:
    """The provider's models, common ones first, each as a full `provider/model` string."""
    if provider in BUILT_IN:
        return list(BUILT_IN[provider])
    return list(dict.fromkeys([*COMMON.get(provider, ()), *_chat_models().get(provider, ())]))


@lru_cache(maxsize=1)
def _chat_models() -> dict[str, tuple[str, ...]]:
    """Provider → its chat models, from litellm's offline price map (empty without litellm)."""
    path = _price_map()
    try:
        table = json.loads(path.read_text(encoding="utf-8")) if path else {}
    except (OSError, ValueError):
        table = {}
    found: dict[str, list[str]] = {}
    for name, entry in table.items():
        if not isinstance(entry, dict) or entry.get("mode") != "chat" or not entry.get("litellm_provider"):
            continue
        provider = str(entry["litellm_provider"])
        if "/" in provider or " " in provider:
            continue
        found.setdefault(provider, []).append(name if name.startswith(provider + "/") else f"{provider}/{name}")
    return {provider: tuple(sorted(set(names))) for provider, names in found.items()}


def _price_map() -> Path | None:
    spec = importlib.util.find_spec("litellm")
    places = list(spec.submodule_search_locations or []) if spec else []
    return next((Path(p) / PRICE_MAP for p in places if (Path(p) / PRICE_MAP).is_file()), None)
