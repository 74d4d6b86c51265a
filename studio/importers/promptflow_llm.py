"""Prompt flow's `llm` and `prompt` nodes → `llm.generate` and `text.template`: Jinja prompt files,
`# system:`/`# user:` sections, settings and the model alias."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from studio.importers.promptflow_checks import refs
from studio.importers.report import NodeReport
from studio.runtime.registry import with_role

if TYPE_CHECKING:
    from studio.importers.promptflow_ctx import Ctx

_ROLE = re.compile(r"^[ \t]*#[ \t]*(system|user|assistant|function|tool)[ \t]*:[ \t]*$", re.I | re.M)
LLM_SETTINGS = {
    "connection", "deployment_name", "model", "temperature", "max_tokens", "top_p", "stop", "suffix", "logprobs", "echo",
    "presence_penalty", "frequency_penalty", "best_of", "logit_bias", "response_format", "seed", "n", "user",
    "tool_choice", "tools", "functions", "function_call",
}  # fmt: skip


def _template_inputs(ctx: Ctx, node: dict[str, Any], text: str, llm: bool) -> tuple[dict[str, Any], list[str]]:
    """Wired template variables, and those left optional (unwired, or from a node that may be bypassed)."""
    from studio.flow import templates

    given = {k: v for k, v in (node.get("inputs") or {}).items() if not (llm and k in LLM_SETTINGS)}
    inputs = {k: ctx.wire(v) for k, v in given.items()}
    try:
        used = templates.variables(text)
    except Exception as err:
        raise ValueError(f"the template does not parse: {err}") from None
    deps = {k: refs(v) for k, v in given.items()}
    optional = sorted(v for v in used if v not in inputs)
    several = len({d for ds in deps.values() for d in ds}) > 1
    if several:
        optional += sorted(k for k, ds in deps.items() if k in used and any(d in ctx.skippable for d in ds))
    return inputs, optional


def prompt(ctx: Ctx, node: dict[str, Any], text: str, entry: NodeReport) -> dict[str, Any] | None:
    try:
        inputs, optional = _template_inputs(ctx, node, text, llm=False)
    except ValueError as err:
        entry.refuse(str(err))
        return None
    config: dict[str, Any] = {"template": text}
    if optional:
        config["optional"] = optional
    return {"type": with_role("template"), "inputs": inputs, "config": config}


def llm(ctx: Ctx, node: dict[str, Any], text: str, entry: NodeReport) -> dict[str, Any] | None:
    try:
        inputs, optional = _template_inputs(ctx, node, text, llm=True)
    except ValueError as err:
        entry.refuse(str(err))
        return None
    given = node.get("inputs") or {}
    config: dict[str, Any] = {}
    if str(node.get("api", "chat")) == "completion":
        config.update(form="completion", prompt=text)
    else:
        config.update(_chat_sections(text, entry))
        if not _parses(config.get("system", "")) or not _parses(config["prompt"]):
            entry.approximate("role markers inside Jinja blocks: the whole template is one user message")
            config = {"prompt": text.strip()}
    if (tokens := _number(given.get("max_tokens"), int)) is not None and tokens > 0:
        config["max_tokens"] = tokens
    stop = given.get("stop")
    if isinstance(stop, list) and stop:
        config["stop"] = [str(s) for s in stop]
    if optional:
        config["optional"] = optional
    spec: dict[str, Any] = {"type": with_role("completion"), "inputs": inputs, "config": config}
    model = _model_string(node)
    origin = f"connection {node.get('connection') or given.get('connection') or '?'}, {given.get('deployment_name') or given.get('model') or '?'}"
    alias = ctx.b.alias(model, _number(given.get("temperature"), float), origin)
    if alias:
        spec["model"] = alias
    return spec


def _chat_sections(text: str, entry: NodeReport) -> dict[str, Any]:
    """`# system:` becomes `system`; one `# user:` section becomes the prompt. Other turns stay in
    the prompt as text (approximated)."""
    marks = list(_ROLE.finditer(text))
    if not marks:
        return {"prompt": text.strip()}
    head = text[: marks[0].start()].strip()
    sections = [
        (m.group(1).lower(), text[m.end() : (marks[i + 1].start() if i + 1 < len(marks) else len(text))])
        for i, m in enumerate(marks)
    ]
    config: dict[str, Any] = {}
    if sections[0][0] == "system":
        config["system"] = sections.pop(0)[1].strip()
    if head:
        entry.approximate("text before the first role marker is kept at the start of the prompt")
    if len(sections) == 1 and sections[0][0] == "user" and not head:
        config["prompt"] = sections[0][1].strip()
        return config
    turns = [f"# {role}:\n{body.strip()}" if body.strip() else f"# {role}:" for role, body in sections]
    config["prompt"] = "\n".join(p for p in (head, *turns) if p)
    if len(sections) != 1 or sections[0][0] != "user":
        entry.approximate(
            "the chat turns after the system message go to the model as one user message (role markers as text)"
        )
    if "prompt" not in config or not config["prompt"]:
        config["prompt"] = "{{ '' }}"
    return config


def _parses(text: str) -> bool:
    from studio.flow import templates

    try:
        templates.variables(text)
    except Exception:
        return False
    return True


def _number(value: Any, kind: type[int] | type[float]) -> Any:
    try:
        return kind(value) if value not in (None, "") and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _model_string(node: dict[str, Any]) -> str:
    given = node.get("inputs") or {}
    provider = str(node.get("provider") or "")
    connection = str(node.get("connection") or "")
    if provider == "AzureOpenAI" or (not provider and "azure" in connection.lower()):
        return f"azure/{given.get('deployment_name') or given.get('model') or 'deployment'}"
    return f"openai/{given.get('model') or given.get('deployment_name') or 'gpt-4o-mini'}"
