"""A JSON object from a model's reply: the schema's fields told in words, the opening a
completion continues, near-JSON repaired, and the reply checked against the schema
(`llm.structured`)."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict

from studio.node import ANY, PortType, parse_type

_JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "dict": "object"}
_PORT_TYPES = {v: k for k, v in _JSON_TYPES.items()}
TOOL = "answer"
"""The function a `tool` answer is a forced call of."""


def _kind(schema: dict[str, Any]) -> str:
    """A property's type in a few words: `integer`, `list of string`, `string, one of a, b`."""
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(_kind(s) for s in schema["anyOf"])
    kind = schema.get("type", "any value")
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"list of {_kind(schema['items'])}"
    return " or ".join(kind) if isinstance(kind, list) else str(kind)


def field_schema(port: PortType) -> dict[str, Any]:
    """The JSON Schema of a port type."""
    if port.name == "any":
        schema: dict[str, Any] = {}
    elif port.name == "list":
        schema = {"type": "array", **({"items": field_schema(port.item)} if port.item else {})}
    else:
        schema = {"type": _JSON_TYPES[port.name]}
    return {"anyOf": [schema, {"type": "null"}]} if port.optional and schema else schema


def schema_port(schema: dict[str, Any], optional: bool) -> PortType:
    """The port type of a JSON Schema property (`any` for what the port language cannot say)."""
    kind = schema.get("type")
    others = [s for s in schema.get("anyOf", []) if s.get("type") != "null"]
    if len(others) == 1 and len(schema["anyOf"]) == 2:
        return schema_port(others[0], True)
    if isinstance(kind, list) and "null" in kind and len(kind) == 2:
        return schema_port({**schema, "type": next(k for k in kind if k != "null")}, True)
    if kind == "array":
        items = schema.get("items")
        item = schema_port(items, False) if isinstance(items, dict) else None
        return PortType("list", item, optional)
    if isinstance(kind, str) and kind in _PORT_TYPES:
        return PortType(_PORT_TYPES[kind], None, optional)
    return ANY


_REPAIRS = [
    (re.compile(r"([{,]\s*)([A-Za-z_]\w*)\s*:"), r'\1"\2":'),  # {name: 1} → {"name": 1}
    (re.compile(r"([:\[,{]\s*)'([^'\\\n]*)'"), r'\1"\2"'),  # 'text' → "text" where a value or key starts
    (re.compile(r"(:\s*)True\b"), r"\1true"),
    (re.compile(r"(:\s*)False\b"), r"\1false"),
    (re.compile(r"(:\s*)None\b"), r"\1null"),
    (re.compile(r",(\s*[}\]])"), r"\1"),  # trailing commas
]


def first_object(text: str) -> Any:
    """The first JSON object in a reply, chatter around it ignored; raises ValueError.

    Small models' near-JSON (bare or single-quoted keys, Python literals, trailing commas) is
    repaired before giving up; the error is the one of the reply as written.
    """
    start = text.find("{")
    if start < 0:
        raise ValueError("the reply holds no JSON object")
    try:
        return json.JSONDecoder().raw_decode(text[start:])[0]
    except json.JSONDecodeError as err:
        problem = f"not valid JSON: {err.msg} at character {err.pos}"
    repaired = text[start:]
    for pattern, replacement in _REPAIRS:
        repaired = pattern.sub(replacement, repaired)
    try:
        return json.JSONDecoder().raw_decode(repaired)[0]
    except json.JSONDecodeError:
        raise ValueError(problem) from None


def describe(schema: dict[str, Any]) -> str:
    """How the expected object is explained to the model: its fields, one a line.

    A tiny model copies a raw JSON Schema instead of filling it, so even a schema is told as a list.
    """
    required = set(schema.get("required", []))
    lines = ["Answer with one JSON object with these fields:"]
    for name, prop in schema.get("properties", {}).items():
        kind = _kind(prop) + ("" if name in required else ", optional")
        lines.append(f"- {name} ({kind})" + (f": {prop['description']}" if prop.get("description") else ""))
    return "\n".join(lines)


def opening(schema: dict[str, Any]) -> str:
    """How a completion-form answer starts: the object and its first field's name, for the model to go on."""
    properties = schema.get("properties", {})
    if not properties:
        return "{"
    first, prop = next(iter(properties.items()))
    # Never end on a space: the model's tokens carry their own leading space.
    return "{" + json.dumps(first) + (': "' if prop.get("type") == "string" and "enum" not in prop else ":")


class FieldSpec(BaseModel):
    """One field of the object."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    type: str = "str"
    """Port type: str, int, float, bool, dict, list, list[T] or any; `T | null` makes it optional."""
    description: str = ""
    """What the field holds; shown to the model."""


Fields = dict[str, str | FieldSpec]
"""A field list: name → type, or a `FieldSpec`."""


def _specs(fields: Fields) -> dict[str, FieldSpec]:
    return {k: v if isinstance(v, FieldSpec) else FieldSpec(type=v) for k, v in fields.items()}


def fields_problem(fields: Fields) -> tuple[str, str] | None:
    """The first field whose type does not parse, as (`fields.NAME`, why), or None."""
    for name, spec in _specs(fields).items():
        try:
            parse_type(spec.type)
        except ValueError as err:
            return f"fields.{name}", str(err)
    return None


def fields_schema(fields: Fields) -> dict[str, Any]:
    """The JSON Schema of an object with these fields (the optional ones not required)."""
    properties, required = {}, []
    for name, spec in _specs(fields).items():
        port = parse_type(spec.type)
        properties[name] = {**field_schema(port), **({"description": spec.description} if spec.description else {})}
        if not port.optional:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}


def schema_problem(schema: dict[str, Any]) -> str | None:
    """What is wrong with a node's `json_schema`, or None: it must be a valid schema of an object."""
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as err:
        return f"invalid JSON Schema: {err.message}"
    return None if schema.get("type") == "object" else "the schema must describe an object (type: object)"


def problem(schema: dict[str, Any], data: Any) -> str | None:
    """Why `data` is not acceptable, or None."""
    error = jsonschema.exceptions.best_match(jsonschema.validators.validator_for(schema)(schema).iter_errors(data))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def answer_tool(schema: dict[str, Any]) -> dict[str, Any]:
    """The function the `tool` method forces a call of: its parameters are the object's schema."""
    parameters = {k: v for k, v in schema.items() if k != "$schema"}
    function = {"name": TOOL, "description": "Give the answer as one object.", "parameters": parameters}
    return {"type": "function", "function": function}
