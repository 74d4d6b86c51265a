"""Dify's `agent` node → `llm.agent`, approximated.

A Dify agent runs a plugin strategy (function calling, ReAct, or a marketplace strategy such as
TOD) with its model, instruction, query and tools. `llm.agent` is a tool loop too: the model
becomes an alias, the query its prompt, the instruction its instructions. Dify's tools are
marketplace plugins Flowstudio does not have (only `calculator` is built in), so the agent keeps
the tools that exist and the report names the others; a complete MCP server URL is kept under
`mcp:`; conversation memory and a strategy's own settings (schemas) are not kept as such.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from studio.importers.dify_wiring import Wiring
from studio.importers.report import NodeReport
from studio.runtime.registry import with_role

PORTS = {"text": "answer", "json": "turns"}
"""Dify agent outputs → llm.agent's outputs (`text` is llm.generate's `text` when no tool is left)."""
BUILT_IN_TOOLS = {"calculator", "math", "maths"}
"""Dify tool providers whose job Flowstudio's built-in `calculator` tool does."""
NATIVE = {"function_calling", "functioncalling", "react", "cot"}
"""Dify strategies that are a plain tool loop, as llm.agent's is."""
SKIPPED = {"model", "query", "instruction", "tools", "mcp_server", "storage_key", "maximum_iterations", "context"}


def port(data: dict[str, Any], var: str) -> str:
    """The output a reference to the agent's `var` reads."""
    if not _tools(_params(data), NodeReport("", "", None)):
        return {"text": "text"}.get(var, var)
    return PORTS.get(var, var)


def _params(data: dict[str, Any]) -> dict[str, Any]:
    return {str(k): v for k, v in (data.get("agent_parameters") or {}).items() if isinstance(v, dict)}


def agent(ctx: Wiring, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    """The llm.agent standing for a Dify agent node (always approximated: say how); llm.generate
    when none of its tools exists here (a tool loop without tools is one model answer)."""
    params = _params(data)
    inputs: dict[str, Any] = {}
    query = _text(ctx, params.get("query"), inputs, "query")
    instruction = _text(ctx, params.get("instruction"), inputs, "instruction")
    config: dict[str, Any] = {"prompt": query or "{{ query }}"}
    if not query:
        inputs["query"] = ctx.wire(["sys", "query"])
    if instruction and "{{" in instruction:
        config["prompt"] = f"{instruction}\n\n{config['prompt']}"
    elif instruction:
        config["instructions"] = instruction
    extras = _strategy_settings(params)
    if extras:
        config["instructions"] = "\n\n".join(filter(None, [config.get("instructions"), extras]))
    config.update(_tools(params, entry))
    turns = _value(params.get("maximum_iterations"))
    if isinstance(turns, int) and 1 <= turns <= 50:
        config["max_turns"] = turns
    spec: dict[str, Any] = {"type": with_role("agent"), "inputs": inputs, "config": config}
    if "tools" not in config and "mcp" not in config:
        spec["type"] = with_role("completion")
        spec["config"] = {k: v for k, v in config.items() if k in ("prompt", "instructions")}
        if "instructions" in spec["config"]:
            spec["config"]["system"] = spec["config"].pop("instructions")
        entry.approximate("none of its tools exists here: it becomes llm.generate (one answer, no tool loop)")
    _model(ctx, _value(params.get("model")), spec)
    _notes(data, params, entry, looped=spec["type"] == with_role("agent"))
    return spec


def _value(param: Any) -> Any:
    return param.get("value") if isinstance(param, dict) else None


def _text(ctx: Wiring, param: Any, inputs: dict[str, Any], name: str) -> str:
    """A constant/mixed text parameter as a template, or a variable parameter as `{{ name }}`."""
    if not isinstance(param, dict):
        return ""
    value = param.get("value")
    if param.get("type") == "variable" and isinstance(value, list):
        inputs[name] = ctx.wire(value)
        return "{{ " + name + " }}"
    return ctx.template(str(value), inputs).strip() if isinstance(value, str) else ""


def _strategy_settings(params: dict[str, Any]) -> str:
    """A strategy's other constant settings (task or information schemas), as text for the instructions."""
    lines = []
    for key, param in params.items():
        value = _value(param)
        if key not in SKIPPED and isinstance(value, str) and value.strip():
            lines.append(f"{key}:\n{value.strip()}")
    return "\n\n".join(lines)


def _tools(params: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    """The agent's tools that exist here (`tools`, `mcp`); the report names the rest."""
    config: dict[str, Any] = {}
    listed = _value(params.get("tools"))
    tools = [t for t in listed if isinstance(t, dict) and t.get("enabled", True)] if isinstance(listed, list) else []
    kept = [t for t in tools if str(t.get("provider_name")) in BUILT_IN_TOOLS]
    if kept:
        config["tools"] = ["calculator"]
        names = sorted({f"{t.get('provider_name')}/{t.get('tool_name')}" for t in kept})
        entry.approximate(f"{', '.join(names)} becomes the built-in `calculator` tool")
    dropped = sorted({f"{t.get('provider_name')}/{t.get('tool_name')}" for t in tools if t not in kept})
    if dropped:
        entry.approximate(
            f"Dify tools not built in, left out of the agent (add them under `tools:`): {', '.join(dropped)}"
        )
    url = _value(params.get("mcp_server"))
    if isinstance(url, str) and url.strip():
        parts = urlsplit(url.strip())
        if parts.scheme in ("http", "https") and parts.netloc and "*" not in url and not parts.query:
            config["mcp"] = [{"url": url.strip()}]
            entry.approximate(f"MCP server {url.strip()} kept: llm.agent speaks streamable HTTP, Dify's plugin SSE")
        else:
            entry.approximate(
                "the MCP server URL is incomplete or carries a key: add it under `mcp:` (keys as $env.NAME)"
            )
    return config


def _model(ctx: Wiring, model: Any, spec: dict[str, Any]) -> None:
    model = model if isinstance(model, dict) else {}
    provider = str(model.get("provider") or "openai").rsplit("/", 1)[-1]
    params = model.get("completion_params") or {}
    temperature = params.get("temperature") if isinstance(params, dict) else None
    alias = ctx.b.alias(
        f"{provider}/{model.get('model') or 'gpt-4o-mini'}",
        float(temperature) if isinstance(temperature, int | float) else None,
        f"Dify agent, provider {provider}",
    )
    if alias:
        spec["model"] = alias


def _notes(data: dict[str, Any], params: dict[str, Any], entry: NodeReport, *, looped: bool) -> None:
    strategy = str(data.get("agent_strategy_name") or "")
    label = data.get("agent_strategy_label") or strategy or "?"
    if looped and strategy.lower().replace("-", "_") in NATIVE:
        entry.approximate(f"the {strategy} strategy becomes llm.agent's tool loop")
    elif looped:
        entry.approximate(
            f"the agent strategy {label} ({strategy}) becomes llm.agent's tool loop; its settings go to the instructions"
        )
    if "storage_key" in params or (data.get("memory") or {}).get("window"):
        entry.approximate("conversation memory is not kept between runs")
