"""llm.structured: valid objects, re-asks with the validation error, the typed failure, compile checks."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from nodes.llm_structured import Structured, first_object
from studio.errors import CompileError
from studio.node import PortType
from tests.nodes.runner import run_flow

PERSON = """
inputs: {text: {type: str}}
outputs: {data: $person.data, name: $person.name, age: $person.age}
models:
  default:
    model: scripted
    script: SCRIPT
nodes:
  person:
    type: llm.structured
    inputs: {text: $inputs.text}
    config: CONFIG
"""


def _flow(script: list[dict[str, Any]], config: str, outputs: str = "") -> str:
    flow = PERSON.replace("SCRIPT", json.dumps(script)).replace("CONFIG", config)
    return flow.replace("{data: $person.data, name: $person.name, age: $person.age}", outputs) if outputs else flow


FIELDS = '{prompt: "Text: {{ text }}", fields: {name: str, age: int, city: {type: str | null, description: Where}}}'


@dataclass
class Case:
    name: str
    script: list[dict[str, Any]]
    outputs: dict[str, Any] | None
    calls: int
    config: str = FIELDS
    error: str | None = None
    prompts: list[str] = field(default_factory=list)
    """Texts the last prompt must contain."""


CASES = [
    Case(
        "valid on the first try; the completion prompt opens the object for the model",
        [{"match": 'JSON: \\{"name": "$', "reply": 'Bob", "age": 42, "city": null}'}],
        {"data": {"name": "Bob", "age": 42, "city": None}, "name": "Bob", "age": 42},
        1,
        prompts=["- name (string)", "- age (integer)", "- city (string or null, optional): Where"],
    ),
    Case(
        "near-JSON is repaired and fields nobody asked for are dropped",
        [{"reply": "Ann\", age: 7, hobby: 'chess',}"}],
        {"data": {"name": "Ann", "age": 7, "city": None}, "name": "Ann", "age": 7},
        1,
    ),
    Case(
        "an invalid reply is sent back with the problem, then accepted",
        [
            {"match": "Error: age: 'old' is not of type 'integer'", "reply": 'Bob", "age": 42}'},
            {"reply": 'Bob", "age": "old"}'},
        ],
        {"data": {"name": "Bob", "age": 42, "city": None}, "name": "Bob", "age": 42},
        2,
    ),
    Case(
        "still invalid after the re-asks: a typed failure showing the last reply",
        [{"reply": "Bob"}],
        None,
        3,
        error='no valid object after 3 tries: not valid JSON: Unterminated string starting at at character 9; last reply: {"name": "Bob',
    ),
    Case(
        "retries: 0 fails at once; a missing required field is named",
        [{"reply": 'Bob"}'}],
        None,
        1,
        config='{prompt: "Text: {{ text }}", fields: {name: str, age: int}, retries: 0}',
        error="'age' is a required property",
    ),
    Case(
        "a JSON Schema, told to the model as a field list, validated as written",
        [{"reply": ' "bug", "urgent": true, "note": "kept"}'}],
        {"data": {"category": "bug", "urgent": True, "note": "kept"}, "name": None, "age": None},
        1,
        config=json.dumps(
            {
                "prompt": "Ticket: {{ text }}",
                "json_schema": {
                    "type": "object",
                    "properties": {"category": {"enum": ["billing", "bug"]}, "urgent": {"type": "boolean"}},
                    "required": ["category"],
                },
            }
        ),
        prompts=['- category (one of "billing", "bug")', "- urgent (boolean, optional)", 'JSON: {"category":'],
    ),
    Case(
        "chat form reads the object out of a fenced reply",
        [{"reply": 'Sure!\n```json\n{"name": "Eve", "age": 5}\n```'}],
        {"data": {"name": "Eve", "age": 5, "city": None}, "name": "Eve", "age": 5},
        1,
        config='{prompt: "{{ text }}", fields: {name: str, age: int, city: str | null}, form: chat}',
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_structured(case: Case) -> None:
    outputs = (
        "{data: $person.data, name: $person.name, age: $person.age}"
        if "fields" in case.config
        else "{data: $person.data, name: null, age: null}"
    )
    result, store = await run_flow(_flow(case.script, case.config, outputs), {"text": "Bob is 42."})
    assert result.outputs == case.outputs, result.error
    calls = store.calls(result.run_id)
    assert len(calls) == case.calls
    if case.error:
        assert result.status == "failed" and case.error in str(result.error)
        assert store.steps(result.run_id)[0].error_kind == "invalid_output"
    prompt = calls[-1].request.get("prompt") or json.dumps(calls[-1].request["messages"])
    for text in case.prompts:
        assert text in prompt


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("{prompt: x}", "give either `fields` or `json_schema`"),
        ("{prompt: x, fields: {a: int}, json_schema: {type: object}}", "give either"),
        ("{prompt: x, fields: {a: integer}}", "unknown type 'integer'"),
        ("{prompt: x, json_schema: {type: array}}", "must describe an object"),
        ("{prompt: x, json_schema: {type: 12}}", "invalid JSON Schema"),
        ("{prompt: x, fields: {a: int}, demos: [{text: hi}]}", "a demo needs a `data` object"),
    ],
)
async def test_bad_config_is_a_compile_error(config: str, message: str) -> None:
    with pytest.raises(CompileError, match=message):
        await run_flow(_flow([], config, "{data: $person.data}"))


def test_fields_become_typed_output_ports() -> None:
    node = Structured(
        Structured.Config.model_validate(
            {"prompt": "x", "fields": {"n": "int", "tags": "list[str]", "m": "float | null"}}
        )
    )
    assert node.output_ports() == {
        "n": PortType("int"),
        "tags": PortType("list", PortType("str")),
        "m": PortType("float", optional=True),
        "data": PortType("dict"),
    }


@pytest.mark.parametrize(
    ("reply", "data"),
    [
        ('noise {"a": 1} more {"b": 2}', {"a": 1}),
        ("{'a': 'x', b: True, c: None}", {"a": "x", "b": True, "c": None}),
        ('{"a": [1, 2,], }', {"a": [1, 2]}),
    ],
)
def test_first_object(reply: str, data: dict[str, Any]) -> None:
    assert first_object(reply) == data


def test_first_object_without_an_object() -> None:
    with pytest.raises(ValueError, match="no JSON object"):
        first_object("I cannot help with that.")
