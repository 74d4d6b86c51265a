"""Dify nodes → flow nodes, one converter per Dify node type (see docs/importing.md for the mapping)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from studio.importers.dify_agent import agent
from studio.importers.dify_ctx import VAR, Ctx
from studio.importers.dify_lists import document_extractor, list_operator
from studio.importers.dify_requests import http, tool
from studio.importers.report import NodeReport
from studio.importers.sources import sandbox_notes, tool_function
from studio.runtime.registry import with_role

INPUT_TYPES = {"text-input": "str", "paragraph": "str", "select": "str", "number": "float"}
FIELD_TYPES = {"string": "str", "number": "float", "bool": "bool", "boolean": "bool", "select": "str",
               "array[string]": "list[str]", "array[number]": "list[float]", "array[object]": "list[dict]",
               "array[bool]": "list[bool]", "object": "dict"}  # fmt: skip
OPERATORS = {
    "contains": "({r} is not none and {v} in {r})", "not contains": "({r} is none or {v} not in {r})",
    "start with": "({r} or '').startswith({v})", "end with": "({r} or '').endswith({v})",
    "is": "{r} == {v}", "is not": "{r} != {v}", "empty": "not {r}", "not empty": "{r}",
    "=": "{r} == {n}", "≠": "{r} != {n}", ">": "{r} > {n}", "<": "{r} < {n}", "≥": "{r} >= {n}", "≤": "{r} <= {n}",
    "null": "{r} is none", "not null": "{r} is not none",
}  # fmt: skip

Handler = Callable[[Ctx, dict[str, Any], NodeReport], "dict[str, Any] | None"]


def _start(ctx: Ctx, data: dict[str, Any], entry: NodeReport) -> None:
    for var in data.get("variables") or []:
        spec: dict[str, Any] = {"type": INPUT_TYPES.get(str(var.get("type")), "any")}
        if var.get("label"):
            spec["description"] = str(var["label"])
        if not var.get("required", True):
            spec["default"] = None if spec["type"] != "str" else ""
        if var.get("type") in ("file", "file-list"):
            entry.approximate(f"file input {var.get('variable')!r} becomes an `any` input (a path or text)")
        ctx.b.inputs[str(var.get("variable"))] = spec


def _outputs(ctx: Ctx, pairs: list[tuple[str, Any]]) -> None:
    for name, wire in pairs:
        if name in ctx.b.outputs and wire is not None:
            merge = ctx.b.new_id(f"{name}_merged")
            ctx.b.nodes[merge] = {"type": with_role("merge"), "inputs": {"options": [ctx.b.outputs[name], wire]}}
            wire = f"${merge}.value"
        ctx.b.outputs[name] = wire


def _end(ctx: Ctx, data: dict[str, Any], entry: NodeReport) -> None:
    _outputs(ctx, [(str(o.get("variable")), ctx.wire(o.get("value_selector"))) for o in data.get("outputs") or []])


def _answer(ctx: Ctx, data: dict[str, Any], entry: NodeReport) -> None:
    text = str(data.get("answer") or "")
    whole = VAR.fullmatch(text.strip())
    if whole:
        _outputs(ctx, [("answer", ctx.wire([whole.group(1), *whole.group(2).split(".")]))])
        return
    inputs: dict[str, Any] = {}
    template = ctx.template(text, inputs)
    node_id = ctx.b.new_id(str(data.get("title") or "answer"), "answer")
    ctx.answer = node_id
    ctx.b.nodes[node_id] = {
        "type": with_role("template"),
        "inputs": inputs,
        "config": {"template": template},
        "description": "Dify: the answer",
    }
    _outputs(ctx, [("answer", f"${node_id}.text")])


def _model(ctx: Ctx, data: dict[str, Any], spec: dict[str, Any]) -> None:
    model = data.get("model") or {}
    params = model.get("completion_params") or {}
    provider = str(model.get("provider") or "openai").rsplit("/", 1)[-1]
    string = f"{provider}/{model.get('name') or 'gpt-4o-mini'}"
    temperature = params.get("temperature")
    alias = ctx.b.alias(
        string, float(temperature) if isinstance(temperature, int | float) else None, f"Dify provider {provider}"
    )
    if alias:
        spec["model"] = alias
    tokens = params.get("max_tokens")
    if isinstance(tokens, int) and tokens > 0:
        spec["config"]["max_tokens"] = tokens


def _llm(ctx: Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    inputs: dict[str, Any] = {}
    messages = data.get("prompt_template") or []
    if isinstance(messages, dict):
        messages = [{"role": "user", "text": messages.get("text", "")}]
    context = data.get("context") or {}
    if context.get("enabled") and context.get("variable_selector"):
        inputs["context"] = ctx.wire(context["variable_selector"])
    system = "\n\n".join(ctx.template(str(m.get("text", "")), inputs) for m in messages if m.get("role") == "system")
    turns = [m for m in messages if m.get("role") != "system"]
    prompt = "\n\n".join(ctx.template(str(m.get("text", "")), inputs) for m in turns)
    if len(turns) > 1:
        entry.approximate("several user/assistant messages are sent as one user message")
    if (data.get("memory") or {}).get("window"):
        entry.approximate("conversation memory is not kept between runs")
    prompt = prompt.replace("{{#context#}}", "{{ context }}")
    system = system.replace("{{#context#}}", "{{ context }}")
    config: dict[str, Any] = {"prompt": prompt or "{{ query }}"}
    if not prompt:
        inputs["query"] = ctx.wire(["sys", "query"])
    if system:
        config["system"] = system
    if str((data.get("model") or {}).get("mode")) == "completion":
        config["form"] = "completion"
    spec = {"type": with_role("completion"), "inputs": inputs, "config": config}
    _model(ctx, data, spec)
    return spec


def _named_inputs(ctx: Ctx, data: dict[str, Any]) -> dict[str, Any]:
    return {
        str(v.get("variable")): ctx.wire(v.get("value_selector"))
        for v in data.get("variables") or []
        if isinstance(v, dict)
    }


def _template(ctx: Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    return {
        "type": with_role("template"),
        "inputs": _named_inputs(ctx, data),
        "config": {"template": str(data.get("template") or "")},
    }


def _code(ctx: Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any] | None:
    if data.get("code_language") != "python3":
        entry.refuse(f"code in {data.get('code_language')}: code.python runs Python only")
        return None
    try:
        func = tool_function(str(data.get("code") or ""), decorator="main", entry="main")
    except ValueError as err:
        entry.refuse(str(err))
        return None
    inputs = _named_inputs(ctx, data)
    call = ", ".join(f"{n}={n}" for n in inputs if n in func.params)
    for note in sandbox_notes(func):
        entry.approximate(note)
    return {
        "type": with_role("python_code"),
        "inputs": inputs,
        "config": {"code": f"{func.code}\n\nresult = {func.name}({call})\n"},
    }


def _condition(ctx: Ctx, cond: dict[str, Any], inputs: dict[str, Any]) -> str:
    wire = ctx.wire(cond.get("variable_selector"))
    name = f"v{len(inputs) + 1}"
    inputs[name] = wire
    value = cond.get("value")
    number = value if isinstance(value, int | float) else _float(value)
    shape = OPERATORS.get(str(cond.get("comparison_operator")), "{r} == {v}")
    return shape.format(r=name, v=json.dumps(value), n=json.dumps(number))


def _float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _if_else(ctx: Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    cases = data.get("cases") or [
        {
            "case_id": "true",
            "conditions": data.get("conditions") or [],
            "logical_operator": data.get("logical_operator", "and"),
        }
    ]
    inputs: dict[str, Any] = {}
    parts = []
    for i, case in enumerate(cases):
        glue = f" {case.get('logical_operator') or 'and'} "
        test = glue.join(_condition(ctx, c, inputs) for c in case.get("conditions") or []) or "true"
        parts.append(("{% if " if i == 0 else "{% elif ") + test + " %}" + str(case.get("case_id")))
    template = "".join(parts) + "{% else %}false{% endif %}"
    return {
        "type": with_role("template"),
        "inputs": inputs,
        "config": {"template": template},
        "description": "Dify if-else: the branch taken",
    }


def _classifier(ctx: Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    labels = [str(c.get("name")) for c in data.get("classes") or []]
    config: dict[str, Any] = {"labels": labels, "form": "chat"}
    if data.get("instruction"):
        config["instructions"] = str(data["instruction"])
    spec = {
        "type": with_role("classify"),
        "inputs": {"text": ctx.wire(data.get("query_variable_selector"))},
        "config": config,
    }
    _model(ctx, data, spec)
    config.pop("max_tokens", None)
    return spec


def _extractor(ctx: Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for p in data.get("parameters") or []:
        kind = FIELD_TYPES.get(str(p.get("type")), "any")
        if not p.get("required", False):
            kind = f"{kind} | null"
        fields[str(p.get("name"))] = {"type": kind, "description": str(p.get("description") or "")}
    query = data.get("query")
    inputs = {"query": ctx.wire(query)}
    instruction = ctx.template(str(data.get("instruction") or ""), inputs)
    config: dict[str, Any] = {"prompt": "{{ query }}", "fields": fields}
    if instruction:
        config["instructions"] = instruction
    spec = {"type": with_role("structured"), "inputs": inputs, "config": config}
    _model(ctx, data, spec)
    return spec


def _knowledge(ctx: Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    table = "knowledge"
    entry.approximate(
        f"Dify knowledge bases are not exported: build the index with `flowstudio index DOCS --table {table} --db knowledge.db`"
    )
    return {
        "type": with_role("retrieve"),
        "inputs": {"query": ctx.wire(data.get("query_variable_selector"))},
        "config": {"table": table, "db": "knowledge.db"},
    }


def _aggregator(ctx: Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    options = [ctx.wire(v) for v in data.get("variables") or []]
    if (data.get("advanced_settings") or {}).get("group_enabled"):
        entry.approximate("grouped aggregation: only the ungrouped variables are merged")
    return {"type": with_role("merge"), "inputs": {"options": options}}


def _assigner(ctx: Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    entry.approximate("conversation variables are not kept between runs: the assigned value is passed on as `value`")
    options = [ctx.wire(data.get("input_variable_selector"))]
    return {"type": with_role("merge"), "inputs": {"options": options}}


HANDLERS: dict[str, Handler] = {
    "start": _start, "end": _end, "answer": _answer, "llm": _llm, "template-transform": _template,
    "code": _code, "if-else": _if_else, "question-classifier": _classifier,
    "parameter-extractor": _extractor, "http-request": http, "knowledge-retrieval": _knowledge,
    "variable-aggregator": _aggregator, "variable-assigner": _aggregator, "assigner": _assigner,
    "tool": tool, "agent": agent, "list-operator": list_operator, "document-extractor": document_extractor,
}  # fmt: skip
"""Dify node type → its converter (iterations are converted with their graph, in dify.py)."""
