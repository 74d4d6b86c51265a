"""`flowstudio models check`: one tiny call per model alias, with what litellm knows of the model."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studio.flow.spec import ModelSpec
from studio.models import client_for
from studio.models.base import Message, ModelError, Request
from studio.models.capabilities import Capabilities, provider_of

PROBE = Request(messages=(Message("user", "Reply with the word OK."),), max_tokens=4)
"""The tiny call: a few tokens in, at most four out."""


@dataclass
class Checked:
    """One alias' check."""

    alias: str
    model: str
    provider: str
    capabilities: list[str] = field(default_factory=list)
    latency_s: float | None = None
    input_per_1k: float | None = None
    """USD per 1,000 prompt tokens (alias override, else litellm's offline price map); None: unknown."""
    output_per_1k: float | None = None
    reply: str | None = None
    error: str | None = None
    rate_limits: dict[str, str] | None = None
    """The rate-limit headers the provider sent (`x-ratelimit-*`, `anthropic-ratelimit-*`,
    `retry-after`); None when it sent none (or the model is not a provider's)."""

    def as_json(self) -> dict[str, Any]:
        return dict(vars(self))


def prices(spec: ModelSpec) -> tuple[float | None, float | None]:
    """USD per 1,000 input and output tokens: the alias' own, built-in models free, else litellm's map."""
    if spec.input_cost_per_token is not None or spec.output_cost_per_token is not None:
        return (spec.input_cost_per_token or 0.0) * 1000, (spec.output_cost_per_token or 0.0) * 1000
    if spec.model.startswith(("local/", "scripted")):
        return 0.0, 0.0
    from studio.models.capabilities import import_litellm

    try:
        info = import_litellm().get_model_info(spec.model)
    except Exception:
        return None, None
    given = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    return tuple(None if p is None else float(p) * 1000 for p in given)  # type: ignore[return-value]


def _provider(spec: ModelSpec, capabilities: Capabilities | None) -> str:
    if capabilities is not None:
        return capabilities.provider
    return "scripted" if spec.model.startswith("scripted") else provider_of(spec.model)


async def check(alias: str, spec: ModelSpec, base_dir: Path) -> Checked:
    """Build the alias' client, make the tiny call, time it; errors are reported, not raised."""
    client = client_for(spec, base_dir)
    ask = getattr(client, "capabilities", None)
    capabilities: Capabilities | None = ask() if ask else None
    result = Checked(alias, spec.model, _provider(spec, capabilities))
    result.capabilities = capabilities.names() if capabilities else []
    result.input_per_1k, result.output_per_1k = prices(spec)
    start = time.perf_counter()
    try:
        completion = await client.complete(PROBE)
    except ModelError as err:
        result.error = f"{err.kind}: {err}"
        return result
    result.latency_s = round(time.perf_counter() - start, 3)
    result.reply = completion.text.strip()[:40]
    result.rate_limits = completion.limit_headers
    return result


def describe(result: Checked) -> str:
    """One line for people."""

    def price(value: float | None) -> str:
        return "?" if value is None else f"${value:.6g}"

    head = f"{result.alias}: {result.model}  provider {result.provider}"
    caps = ", ".join(result.capabilities) or "none known"
    cost = f"{price(result.input_per_1k)} in / {price(result.output_per_1k)} out per 1,000 tokens"
    if result.error:
        return f"{head}  FAILED {result.error}\n  capabilities: {caps}; {cost}"
    limits = ", ".join(f"{name}: {value}" for name, value in (result.rate_limits or {}).items())
    shown = f"\n  rate limits: {limits}" if limits else ""
    return f"{head}  ok in {result.latency_s:.3f} s\n  capabilities: {caps}; {cost}{shown}"
