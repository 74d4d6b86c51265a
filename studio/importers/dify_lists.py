"""Dify's list operator → `data.extract` (a JMESPath filter, sort and slice), and its document
extractor → a text input (a flow reads no files: the document's text is given to the run)."""

from __future__ import annotations

import json
from typing import Any

from studio.importers.build import slug
from studio.importers.dify_wiring import Wiring
from studio.importers.report import NodeReport
from studio.runtime.registry import with_role

RECORDS = {"first_record": "[0]", "last_record": "[-1]"}
"""The list operator's single-item outputs, read from its `result` list."""
COMPARE = {"=": "==", "is": "==", "≠": "!=", "is not": "!=", ">": ">", "<": "<", "≥": ">=", "≤": "<="}
FUNCTIONS = {"contains": "contains({k}, {v})", "start with": "starts_with({k}, {v})", "end with": "ends_with({k}, {v})"}


def list_port(var: str) -> tuple[str, str]:
    """(output port, JMESPath inside it or "") a reference to the list operator's `var` reads."""
    return "value", RECORDS.get(var, "")


def list_operator(ctx: Wiring, data: dict[str, Any], entry: NodeReport) -> dict[str, Any] | None:
    """A data.extract whose path filters, sorts and cuts the list as the operator's settings say."""
    key = "" if str(data.get("item_var_type")) in ("string", "number", "boolean") else None
    try:
        path = _path(data, key)
    except ValueError as err:
        entry.refuse(str(err))
        return None
    if str(data.get("item_var_type")) == "file":
        entry.approximate("files are a list input of objects in Dify's shape (type, size, name, url, ...)")
    return {"type": with_role("extract"), "inputs": {"data": ctx.wire(data.get("variable"))}, "config": {"path": path}}


def _path(data: dict[str, Any], key: str | None) -> str:
    path = "@"
    filters = data.get("filter_by") or {}
    if filters.get("enabled") and filters.get("conditions"):
        path = f"@[?{' && '.join(_condition(c, key) for c in filters['conditions'])}]"
    order = data.get("order_by") or {}
    if order.get("enabled"):
        field = _field(str(order.get("key") or ""), key)
        path = f"sort({path})" if field == "@" else f"sort_by({path}, &{field})"
        if str(order.get("value")) == "desc":
            path = f"reverse({path})"
    limit = data.get("limit") or {}
    if limit.get("enabled") and isinstance(limit.get("size"), int):
        path = f"{path} | [:{limit['size']}]"
    return path


def _field(name: str, key: str | None) -> str:
    if key is not None or not name:
        return "@"
    if not name.isidentifier():
        raise ValueError(f"the list operator's key {name!r} is not a plain field name")
    return name


def _condition(cond: dict[str, Any], key: str | None) -> str:
    field = _field(str(cond.get("key") or ""), key)
    operator, value = str(cond.get("comparison_operator")), cond.get("value")
    if operator in ("in", "not in"):
        values = value if isinstance(value, list) else [value]
        test = f"contains({_json(values)}, {field})"
        return test if operator == "in" else f"!{test}"
    if operator in ("empty", "not empty"):
        return f"!{field}" if operator == "empty" else f"!!{field}"
    if operator in FUNCTIONS:
        return FUNCTIONS[operator].format(k=field, v=_json(value))
    if operator in COMPARE:
        return f"{field} {COMPARE[operator]} {_json(_number(value) if operator not in ('is', 'is not') else value)}"
    raise ValueError(f"the list operator's condition {operator!r} has no JMESPath equivalent")


def _number(value: Any) -> Any:
    try:
        return float(value) if "." in str(value) else int(str(value))
    except (TypeError, ValueError):
        return value


def _json(value: Any) -> str:
    """A JMESPath literal (`` `...` ``: any JSON value)."""
    return "`" + json.dumps(value, ensure_ascii=False).replace("`", "\\`") + "`"


def document_extractor(ctx: Wiring, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    """The document's text, given as a flow input (a flow reads no files)."""
    name = ctx.b.new_id(slug(str(data.get("title") or ""), "document") + "_text")
    ctx.b.inputs[name] = {
        "type": "str",
        "description": f"The text Dify's document extractor {data.get('title')!r} read",
    }
    entry.approximate(f"a flow reads no files: give the document's text as the input `{name}` (extract it beforehand)")
    return {"type": with_role("template"), "inputs": {"text": f"$inputs.{name}"}, "config": {"template": "{{ text }}"}}
