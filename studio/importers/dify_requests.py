"""Dify's `http-request` and `tool` nodes → `tool.http` (or `code.python` for a built-in tool that is
a few lines of Python; see studio.importers.dify_tools for which tools)."""

from __future__ import annotations

import json
from typing import Any

from studio.importers.build import literal, slug
from studio.importers.dify_ctx import VAR, Ctx
from studio.importers.dify_tools import HTTP_TOOLS, PYTHON_CONFIG, PYTHON_TOOLS
from studio.importers.report import NodeReport
from studio.runtime.registry import with_role


def _text_input(ctx: Ctx, text: str, near: str) -> Any:
    """Text with references: a literal, one wire, or a text.template node rendering it."""
    whole = VAR.fullmatch(text.strip())
    if whole:
        return ctx.wire([whole.group(1), *whole.group(2).split(".")])
    inputs: dict[str, Any] = {}
    template = ctx.template(text, inputs)
    if not inputs:
        return literal(text)
    node_id = ctx.b.new_id(near)
    ctx.b.nodes[node_id] = {"type": with_role("template"), "inputs": inputs, "config": {"template": template}}
    return f"${node_id}.text"


def _pairs(text: Any) -> dict[str, str]:
    lines = str(text or "").splitlines()
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines) if k.strip()}


def http(ctx: Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    base = slug(str(data.get("title") or ""), "http")
    inputs: dict[str, Any] = {"url": _text_input(ctx, str(data.get("url") or ""), f"{base}_url")}
    config: dict[str, Any] = {"method": str(data.get("method") or "get").upper()}
    headers = _pairs(data.get("headers"))
    if any("{{#" in v for v in headers.values()):
        entry.approximate("headers with variables are sent as written; wire them to the `headers` input")
    auth = data.get("authorization") or {}
    if auth.get("type") == "api-key":
        header = (auth.get("config") or {}).get("header") or "Authorization"
        whole = "`Bearer KEY`" if (auth.get("config") or {}).get("type") == "bearer" else "the key"
        entry.approximate(f"header {header} is read from $env.HTTP_API_KEY: set it to {whole}")
        headers[header] = "$env.HTTP_API_KEY"
    if headers:
        config["headers"] = headers
    params = _pairs(data.get("params"))
    if params:
        inputs["query"] = literal(params)
    body = data.get("body") or {}
    if body.get("type") not in (None, "none"):
        raw = body.get("data")
        if isinstance(raw, list):
            raw = "\n".join(str(d.get("value", "")) for d in raw if isinstance(d, dict))
        inputs["body"] = _text_input(ctx, str(raw or ""), f"{base}_body")
        if body.get("type") != "json":
            entry.approximate(f"a {body.get('type')} body is sent as text")
    return {"type": with_role("http_request"), "inputs": inputs, "config": config}


def tool(ctx: Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any] | None:
    """A built-in tool with an HTTP or Python equivalent (studio.importers.dify_tools)."""
    name = str(data.get("tool_name"))
    settings = {str(k): v for k, v in (data.get("tool_configurations") or {}).items()}
    if name in PYTHON_TOOLS:
        tool = PYTHON_TOOLS[name]
        entry.approximate(tool.note)
        given = {var: literal(settings.get(key)) for key, var in PYTHON_CONFIG.items()}
        return {"type": with_role("python_code"), "inputs": given, "config": {"code": tool.code}}
    if name not in HTTP_TOOLS:
        entry.refuse(f"tool {data.get('provider_id')}/{name}: no HTTP or Python equivalent is built in")
        return None
    shape, base = HTTP_TOOLS[name], slug(str(data.get("title") or name), "tool")
    inputs: dict[str, Any] = {}
    used = f"{shape.url} {shape.body}"
    prelude = "".join(f"{{% set {k} = {_jinja_value(v)} %}}" for k, v in settings.items() if _plain(k, v) and k in used)
    prelude += "".join(_parameter(ctx, str(k), v, inputs) for k, v in (data.get("tool_parameters") or {}).items())
    request: dict[str, Any] = {"url": _rendered(ctx, f"{base}_url", prelude + shape.url, inputs)}
    if shape.body:
        request["body"] = _rendered(ctx, f"{base}_body", prelude + shape.body, inputs)
    entry.approximate(shape.note)
    config: dict[str, Any] = {"method": shape.method}
    if shape.headers:
        config["headers"] = dict(shape.headers)
    return {"type": with_role("http_request"), "inputs": request, "config": config}


def _jinja_value(value: Any) -> str:
    """A JSON scalar written as a Jinja literal (`none` for null)."""
    return "none" if value is None else json.dumps(value, ensure_ascii=False)


def _plain(key: str, value: Any) -> bool:
    """Whether a tool configuration can be a Jinja variable (a name, and a JSON scalar)."""
    return key.isidentifier() and (value is None or isinstance(value, str | int | float | bool))


def _parameter(ctx: Ctx, name: str, value: Any, inputs: dict[str, Any]) -> str:
    """One tool parameter as a template variable: a wire in `inputs`, or a `{% set %}` block."""
    kind, raw = (value.get("type"), value.get("value")) if isinstance(value, dict) else ("constant", value)
    if kind == "variable":
        inputs[name] = ctx.wire(raw)
        return ""
    text = str(raw if raw is not None else "")
    whole = VAR.fullmatch(text.strip())
    if whole:
        inputs[name] = ctx.wire([whole.group(1), *whole.group(2).split(".")])
        return ""
    taken = {k: object() for k in (name, *inputs)}  # the template's own inputs get other names
    own = {**taken}
    jinja = ctx.template(text, own)
    inputs.update({k: v for k, v in own.items() if k not in taken})
    return f"{{% set {name} %}}{jinja}{{% endset %}}"


def _rendered(ctx: Ctx, near: str, template: str, inputs: dict[str, Any]) -> str:
    """A text.template node rendering `template` from `inputs`; its text wire."""
    node_id = ctx.b.new_id(near)
    ctx.b.nodes[node_id] = {"type": with_role("template"), "inputs": dict(inputs), "config": {"template": template}}
    return f"${node_id}.text"
