"""Calling tools from nodes: Python functions (arguments typed by the signature, JSON results)
and MCP tools (typed by the JSON Schema their server lists)."""

from __future__ import annotations

import asyncio
import inspect
import typing
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic_core import PydanticSerializationError, to_jsonable_python

from studio.node import ANY, McpTool, NodeError, PortType, from_annotation

Tool = Callable[..., Any]
AnyTool = Tool | McpTool
_JSON_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "object": "dict"}


def schema_port(schema: Any) -> PortType:
    """The port type of a JSON Schema (`any` for what the port types cannot say)."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind == "array":
        return PortType("list", schema_port(schema.get("items")) if isinstance(schema.get("items"), dict) else None)
    return PortType(_JSON_TYPES[kind]) if isinstance(kind, str) and kind in _JSON_TYPES else ANY


def _hints(tool: Tool) -> dict[str, Any]:
    try:
        return typing.get_type_hints(tool)
    except Exception:  # unresolvable annotations read as `any`
        return {}


def _parameters(tool: Tool) -> list[inspect.Parameter]:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p for p in inspect.signature(tool).parameters.values() if p.kind in kinds]


def input_ports(tool: AnyTool) -> dict[str, PortType]:
    """Parameter name → port type, from the annotations (`any` where there is none) or the MCP schema."""
    if isinstance(tool, McpTool):
        properties = tool.input_schema.get("properties")
        return {k: schema_port(v) for k, v in properties.items()} if isinstance(properties, dict) else {}
    hints = _hints(tool)
    return {p.name: from_annotation(hints[p.name]) if p.name in hints else ANY for p in _parameters(tool)}


def required(tool: Tool) -> set[str]:
    """Parameters without a default."""
    return {p.name for p in _parameters(tool) if p.default is inspect.Parameter.empty}


def output_port(tool: Tool) -> PortType:
    """The port type of the return annotation."""
    hints = _hints(tool)
    return from_annotation(hints["return"]) if "return" in hints else ANY


@lru_cache(maxsize=256)
def arguments_model(tool: Tool) -> type[BaseModel]:
    """A pydantic model of the tool's keyword arguments; unknown arguments are refused."""
    hints = _hints(tool)
    fields: dict[str, Any] = {
        p.name: (hints.get(p.name, Any), ... if p.default is inspect.Parameter.empty else p.default)
        for p in _parameters(tool)
    }
    return create_model(
        f"{getattr(tool, '__name__', 'tool')}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )


def _doc(tool: AnyTool) -> str:
    return (tool.description if isinstance(tool, McpTool) else inspect.getdoc(tool) or "").strip()


def summary(name: str, tool: AnyTool) -> str:
    """`name(a: int, b: str): first docstring line`, how a model is told about a tool."""
    ports = input_ports(tool)
    params = ", ".join(f"{p}: {t}" for p, t in ports.items())
    doc = _doc(tool).splitlines()
    return f"{name}({params})" + (f": {doc[0]}" if doc else "")


def function_schema(name: str, tool: AnyTool) -> dict[str, Any]:
    """The OpenAI-style function schema providers' function calling takes."""
    schema = dict(tool.input_schema) if isinstance(tool, McpTool) else arguments_model(tool).model_json_schema()
    schema.pop("title", None)
    return {"type": "function", "function": {"name": name, "description": _doc(tool), "parameters": schema}}


async def call(name: str, tool: Tool, arguments: dict[str, Any], timeout_s: float | None = None) -> Any:
    """Validate `arguments` against the signature, call the tool (sync ones in a thread), return JSON data.

    Raises NodeError: `bad_input` for arguments, `tool_error` for what the tool raised.
    """
    try:
        values = arguments_model(tool).model_validate(arguments)
    except ValidationError as err:
        problem = err.errors(include_url=False)[0]
        where = ".".join(str(p) for p in problem["loc"]) or "arguments"
        raise NodeError(f"tool {name!r}: {where}: {problem['msg']}", kind="bad_input") from None
    kwargs = {key: getattr(values, key) for key in type(values).model_fields}
    try:
        if inspect.iscoroutinefunction(tool):
            result = await asyncio.wait_for(tool(**kwargs), timeout_s)
        else:
            result = await asyncio.wait_for(asyncio.to_thread(tool, **kwargs), timeout_s)
    except TimeoutError:
        raise NodeError(f"tool {name!r} timed out after {timeout_s} s", kind="timeout") from None
    except Exception as err:
        raise NodeError(f"tool {name!r} failed: {type(err).__name__}: {err}", kind="tool_error") from err
    try:
        return to_jsonable_python(result)
    except PydanticSerializationError as err:
        raise NodeError(f"tool {name!r} returned a value that is not JSON data: {err}", kind="tool_error") from None
