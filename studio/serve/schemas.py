"""The per-flow request and response schemas that `/openapi.json` publishes, and the strict check
of a client's inputs; a flow's input and output schemas are `studio.runtime.io_schema`'s."""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from studio.errors import InputError
from studio.runtime.compiler import Plan
from studio.runtime.io_schema import inputs_schema, outputs_schema, port_schema

__all__ = ["add_flow_paths", "check_inputs", "inputs_schema", "outputs_schema", "port_schema", "request_schema"]

MODES = ["wait", "stream", "background"]


def check_inputs(schema: dict[str, Any], inputs: object, field: str = "inputs") -> None:
    """Validate a client's inputs strictly against the published schema (an `integer` refuses "5"
    and true); raises InputError naming the first input at fault (`inputs.count`)."""
    errors = sorted(_validator_of(schema).iter_errors(inputs), key=lambda e: list(e.path))
    if not errors:
        return
    error = errors[0]
    given = inputs if isinstance(inputs, dict) else {}
    if error.validator == "required":
        name = next((n for n in schema.get("required", []) if n not in given), "")
        raise InputError(f"input {name!r} is required", field=f"{field}.{name}")
    if error.validator == "additionalProperties":
        name = next((n for n in given if n not in schema.get("properties", {})), "")
        known = ", ".join(schema.get("properties", {})) or "none"
        raise InputError(f"{name}: the flow has no such input; its inputs: {known}", field=f"{field}.{name}")
    path = [str(part) for part in error.path]
    where = ".".join([field, *path]) if path else field
    shown = json.dumps(error.instance)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    wanted = error.schema.get("type") or "the published schema"
    raise InputError(f"{'.'.join(path) or field}: expected {wanted}, got {shown}", field=where)


_HELD: dict[int, tuple[dict[str, Any], Any]] = {}
"""Validators by the id of the schema object they were made for (a served flow's schema is made
once per version and never changed), so a request does not serialise its schema to find one."""


def _validator_of(schema: dict[str, Any]) -> Any:
    held = _HELD.get(id(schema))
    if held is not None and held[0] is schema:
        return held[1]
    if len(_HELD) >= 256:
        _HELD.clear()
    validator = _validator(json.dumps(schema, sort_keys=True))
    _HELD[id(schema)] = (schema, validator)
    return validator


@functools.lru_cache(maxsize=128)
def _validator(schema_text: str) -> Any:
    """One validator per distinct schema (building one per request cost more than checking)."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema_text))


def schema_name(flow_name: str) -> str:
    """`ticket-triage` → `TicketTriage`: the prefix of the flow's OpenAPI components."""
    words = [w for w in re.split(r"[^0-9A-Za-z]+", flow_name) if w]
    name = "".join(w[:1].upper() + w[1:] for w in words) or "Flow"
    return name if name[0].isalpha() else f"Flow{name}"


def request_schema(plan: Plan) -> dict[str, Any]:
    """The body of `POST /flows/NAME/runs` for this flow."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "inputs": inputs_schema(plan),
            "mode": {
                "enum": MODES,
                "default": "wait",
                "description": "wait: 200 and the run; stream: SSE; background: 202.",
            },
            "models": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Model alias overrides (ALIAS → model string).",
            },
        },
        "additionalProperties": False,
    }
    if any(spec.required for spec in plan.inputs.values()):
        schema["required"] = ["inputs"]
    return schema


def response_schema(plan: Plan) -> dict[str, Any]:
    """The run object a `wait` run of this flow answers with (what `flowstudio run --json` prints)."""
    step = {
        "type": "object",
        "properties": {
            "node": {"type": "string"},
            "status": {"type": "string"},
            "attempt": {"type": "integer"},
            "tokens": {"type": "integer"},
            "cost_usd": {"type": "number"},
            "seconds": {"type": "number"},
            "error": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
    }
    return {
        "type": "object",
        "properties": {
            "run_id": {"type": "string"},
            "status": {"enum": ["running", "succeeded", "failed", "waiting", "cancelled"]},
            "outputs": {"anyOf": [outputs_schema(plan), {"type": "null"}]},
            "error": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "tokens": {"type": "integer"},
            "cost_usd": {"type": "number"},
            "steps": {"type": "array", "items": step},
            "version": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "description": "The flow version the run ran: a published version's id, else the files' content hash.",
            },
        },
        "required": ["run_id", "status", "outputs", "error", "tokens", "cost_usd", "steps", "version"],
    }


def add_flow_paths(openapi: dict[str, Any], flows: dict[str, Plan]) -> dict[str, Any]:
    """Add `/flows/NAME/runs` with its own request and response schema for every served flow."""
    schemas = openapi.setdefault("components", {}).setdefault("schemas", {})
    for name, plan in sorted(flows.items()):
        prefix = schema_name(name)
        schemas[f"{prefix}RunRequest"] = request_schema(plan)
        schemas[f"{prefix}Run"] = response_schema(plan)
        openapi["paths"][f"/flows/{name}/runs"] = {"post": _operation(name, plan, prefix)}
    return openapi


def _operation(name: str, plan: Plan, prefix: str) -> dict[str, Any]:
    def ref(schema: str) -> dict[str, Any]:
        return {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}

    return {
        "summary": f"Run {name}",
        "description": plan.flow.spec.description or f"Run the flow {name}.",
        "operationId": f"run_{re.sub(r'[^0-9A-Za-z]+', '_', name)}",
        "tags": ["flows"],
        "requestBody": {"required": True, "content": ref(f"{prefix}RunRequest")},
        "responses": {
            "200": {"description": "mode wait: the finished run", "content": ref(f"{prefix}Run")},
            "202": {"description": "mode background: the run id, to follow with GET /runs/{run_id}/events"},
            "404": {"description": "no flow of that name"},
            "422": {"description": "bad input; `detail[0].loc` names the field"},
        },
    }
