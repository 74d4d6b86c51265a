"""Model checks of a plan, before anything runs.

Capabilities: nodes that need what their model (per litellm) does not offer; the flow is
valid, but a node will fail or fall back to a weaker method, and no fallback alias helps.

Credentials and local models (`model_problems`): every alias a run needs has its key (the
alias' `$env.NAME`, else its provider's variable, set and not empty) and every `local/...`
model is one that exists and is installed. `flowstudio validate` prints both kinds as warnings
(a machine without keys can still check flows); `run`, `batch` and `optimize` refuse the run
(`require_models`, exit 2) before any node runs or any call is paid for.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable

from studio.errors import FlowWarning, InputError
from studio.flow.spec import ModelSpec
from studio.models import LOCAL_MODELS, client_for
from studio.models.capabilities import Capabilities
from studio.runtime.compiler import Plan, PlanNode

PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "text-completion-openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "azure": ("AZURE_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "perplexity": ("PERPLEXITYAI_API_KEY",),
    "deepinfra": ("DEEPINFRA_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "huggingface": ("HUGGINGFACE_API_KEY",),
    "replicate": ("REPLICATE_API_KEY",),
    "voyage": ("VOYAGE_API_KEY",),
}
"""The variables litellm reads a provider's key from (any one will do), as its
`validate_environment` names them: kept here so `validate` never imports litellm. Providers not
listed are checked with litellm itself when a run starts (`model_problems(..., at_run=True)`)."""
KEYLESS = frozenset({"ollama", "ollama_chat", "lm_studio", "hosted_vllm", "llamafile", "vllm"})
"""Providers served without a key (a local server)."""
BARE_NAMES: tuple[tuple[str, str], ...] = (
    ("gpt-", "openai"),
    ("chatgpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4-", "openai"),
    ("claude-", "anthropic"),
)
"""Model names litellm sends to a provider without a `provider/` prefix: their start, the provider."""
ENV_PREFIX = "$env."


def _capabilities(spec: ModelSpec, plan: Plan) -> Capabilities | None:
    try:
        client = client_for(spec, plan.flow.base_dir)
    except Exception:
        return None
    check = getattr(client, "capabilities", None)
    return check() if check else None


def needs(node: PlanNode) -> list[tuple[tuple[str, ...], str]]:
    """What a node needs: (any one of these capabilities, what for), as its type declares (`Node.model_needs`)."""
    return node.node.model_needs()


def capability_warnings(plan: Plan) -> list[FlowWarning]:
    """One per node whose model, and every fallback alias, lacks a capability it needs."""
    found: dict[str, Capabilities | None] = {}
    warnings = []
    for node_id, node in plan.nodes.items():
        if node.model is None:
            continue
        wants = needs(node)
        aliases = [node.model, *plan.models[node.model].fallbacks]
        for alias in aliases if wants else []:  # litellm is imported only for a node that needs something
            if alias not in found:
                found[alias] = _capabilities(plan.models[alias], plan)
        for wanted, purpose in wants:
            known = [found[a] for a in aliases if found[a] is not None]
            if not known or any(getattr(c, name) for c in known for name in wanted):
                continue
            model = plan.models[node.model].model
            lacks = " or ".join(name.replace("_", " ") for name in wanted)
            text = f"node {node_id} ({node.type}) {purpose}; {model} has no {lacks} (per litellm) and no fallback alias has it"
            line = plan.flow.line_of("nodes", node_id, "model") or plan.flow.line_of("nodes", node_id)
            warnings.append(FlowWarning(text, file=plan.flow.file, line=line))
    return warnings


def needed_aliases(plan: Plan, extra: Iterable[str | None] = ()) -> list[str]:
    """The aliases a run of `plan` may call: its nodes', their fallbacks', and `extra` ones the
    command reads (a judge, a proposer) that the plan defines."""
    wanted = [node.model for node in plan.nodes.values() if node.model]
    wanted += [alias for alias in extra if alias and alias in plan.models]
    found: list[str] = []
    while wanted:
        alias = wanted.pop(0)
        if alias not in found:
            found.append(alias)
            wanted += plan.models[alias].fallbacks
    return found


def model_problems(plan: Plan, extra: Iterable[str | None] = (), *, at_run: bool = False) -> list[FlowWarning]:
    """What stops a needed alias from answering on this machine: a missing or empty key, an
    unknown or uninstalled local model. Each names the file, line and alias."""
    problems = []
    for alias in needed_aliases(plan, extra):
        spec = plan.models[alias]
        found = _problem(spec, at_run)
        if found is None:
            continue
        field, message = found
        written = plan.flow.spec.models.get(alias)
        given = "" if written is not None and written.model == spec.model else " (set by --model)"
        line = plan.flow.line_of("models", alias, field) or plan.flow.line_of("models", alias)
        problems.append(
            FlowWarning(
                f"model alias {alias!r} ({spec.model}){given}: {message}",
                file=plan.flow.file,
                line=line,
                field=f"models.{alias}.{field}",
            )
        )
    return problems


def require_models(plan: Plan, extra: Iterable[str | None] = ()) -> None:
    """Refuse a run whose models cannot answer here (InputError, exit 2): nothing has run yet."""
    problems = model_problems(plan, extra, at_run=True)
    if not problems:
        return
    first = problems[0]
    more = f" (and {len(problems) - 1} more: {', '.join(p.field or '' for p in problems[1:])})" if problems[1:] else ""
    raise InputError(first.message + more, file=first.file, line=first.line, field=first.field)


def _problem(spec: ModelSpec, at_run: bool) -> tuple[str, str] | None:
    """(field, what is wrong) for one alias' model, or None when it can answer here."""
    model = spec.model
    if model == "scripted" or model.startswith("scripted/"):
        return None
    if model.startswith("local/"):
        return _local_problem(model)
    if spec.api_key and spec.api_key.startswith(ENV_PREFIX):
        name = spec.api_key[len(ENV_PREFIX) :]
        return None if _set(name) else ("api_key", f"its key variable {name} {_state(name)}; set {name} first")
    if spec.api_base:
        return None  # a self-hosted server: the engine sends a placeholder key when none is set
    provider = _provider(model)
    names = PROVIDER_KEYS.get(provider)
    if names is None and at_run and provider not in KEYLESS:
        names = _litellm_keys(model, spec.api_base)
    if not names or any(_set(name) for name in names):
        return None
    either = " or ".join(names)
    return (
        "model",
        f"{provider} needs {either} in the environment, which {_state(names[0])}; set it, "
        f"or give the alias api_key: $env.NAME",
    )


def _local_problem(model: str) -> tuple[str, str] | None:
    if model not in LOCAL_MODELS:
        close = difflib.get_close_matches(model, LOCAL_MODELS, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return "model", f"no such local model; {hint}built in: {', '.join(LOCAL_MODELS)}"
    from studio.models.local import INSTALL_COMMAND, is_installed

    return None if is_installed() else ("model", f"it is not installed; run `{INSTALL_COMMAND}`")


def _set(name: str) -> bool:
    return bool(os.environ.get(name, "").strip())


def _state(name: str) -> str:
    return "is empty" if name in os.environ else "is not set"


def _provider(model: str) -> str:
    """litellm's provider of a model string, read from its prefix (or a bare name's start)."""
    prefix, slash, _ = model.partition("/")
    if slash:
        return prefix
    return next((provider for start, provider in BARE_NAMES if model.startswith(start)), "unknown")


def _litellm_keys(model: str, api_base: str | None) -> tuple[str, ...]:
    """The key variables litellm's `validate_environment` says `model` lacks (imported only when a run starts)."""
    from studio.models.capabilities import import_litellm

    try:
        found = import_litellm().validate_environment(model, api_base=api_base)
    except Exception:
        return ()
    return tuple(k for k in found.get("missing_keys") or [] if "KEY" in k or "TOKEN" in k)
