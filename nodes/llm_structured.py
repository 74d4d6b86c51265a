"""`llm.structured`: one JSON object, validated against a field list or a JSON Schema.

In completion form (the default, which small models follow best) the prompt lists the fields
and ends in `JSON: {"first_field":`, so the model only continues an object. A reply that does not parse or validate is sent back
with the problem, up to `retries` times; then the node fails with an OutputError that shows
the last reply. A field list also gives each field its own typed output port.

Where the model picks tools natively, the object is asked for as a forced call of one function
whose parameters are the schema. On a provider that sends a completion prompt as a user message
but continues an assistant turn (Anthropic's protocol), the completion form is sent as a chat
whose assistant turn begins the object (a prefill).
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field

from nodes.prompting import Form
from studio.node import (
    ANY,
    Completion,
    Message,
    Node,
    NodeContext,
    OptionalVariables,
    OutputError,
    PortType,
    TemplateInputs,
    parse_type,
    render,
)

_JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "dict": "object"}
_PORT_TYPES = {v: k for k, v in _JSON_TYPES.items()}
LABEL = "JSON:"
TOOL = "answer"
"""The function a `tool` answer is a forced call of."""
Method = Literal["tool", "prefill", "text"]
"""How the object is asked for (see `Structured.method`)."""


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


class FieldSpec(BaseModel):
    """One field of the object."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    type: str = "str"
    """Port type: str, int, float, bool, dict, list, list[T] or any; `T | null` makes it optional."""
    description: str = ""
    """What the field holds; shown to the model."""


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


class Structured(Node):
    """Ask the model for a JSON object and validate it."""

    uses_model = True
    starter = {"prompt": "{{ text }}", "fields": {"answer": "str"}}
    scripted_replies = "a JSON object the fields validate"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        prompt: str
        """Jinja2 template over the node's inputs; each variable is an input."""
        fields: dict[str, str | FieldSpec] = {}
        """The object's fields: name → type (`int`, `list[str]`, `str | null`) or {type, description}."""
        json_schema: dict[str, Any] | None = None
        """A JSON Schema (type object) instead of `fields`."""
        instructions: str = ""
        """Task instructions placed before the prompt; the optimizer rewrites these."""
        system: str = ""
        """System message (chat form) or preamble (completion form)."""
        demos: list[dict[str, Any]] = []
        """Worked examples: input values plus the expected `data` object."""
        form: Form = "completion"
        """`completion` (the prompt ends in `JSON: {"first_field":` for the model to go on; best on small models) or `chat`."""
        retries: int = Field(default=2, ge=0, le=5)
        """How often an invalid reply is sent back with the problem before the node fails."""
        optional: OptionalVariables = []
        max_tokens: int | None = Field(default=None, gt=0)
        """Cap on generated tokens per call; the model alias' setting when omitted."""

    Inputs = TemplateInputs

    class Outputs(BaseModel):
        model_config = ConfigDict(extra="allow")

        data: dict[str, Any]
        """The validated object; each listed field is also an output of its own."""

    config: Config

    def templates(self) -> list[tuple[str, str]]:
        c = self.config
        return [("prompt", c.prompt), ("system", c.system), ("instructions", c.instructions)]

    def _fields(self) -> dict[str, FieldSpec]:
        return {k: v if isinstance(v, FieldSpec) else FieldSpec(type=v) for k, v in self.config.fields.items()}

    def check(self) -> list[tuple[str, str]]:
        c = self.config
        if bool(c.fields) == (c.json_schema is not None):
            return [("fields", "give either `fields` or `json_schema`")]
        for name, spec in self._fields().items():
            try:
                parse_type(spec.type)
            except ValueError as err:
                return [(f"fields.{name}", str(err))]
        if c.json_schema is not None:
            try:
                jsonschema.validators.validator_for(c.json_schema).check_schema(c.json_schema)
            except jsonschema.SchemaError as err:
                return [("json_schema", f"invalid JSON Schema: {err.message}")]
            if c.json_schema.get("type") != "object":
                return [("json_schema", "the schema must describe an object (type: object)")]
        problems = [(f"demos.{i}", "a demo needs a `data` object") for i, d in enumerate(c.demos) if "data" not in d]
        return problems[:1]

    def schema(self) -> dict[str, Any]:
        """The JSON Schema replies are validated against."""
        if self.config.json_schema is not None:
            return self.config.json_schema
        properties, required = {}, []
        for name, spec in self._fields().items():
            port = parse_type(spec.type)
            properties[name] = {**field_schema(port), **({"description": spec.description} if spec.description else {})}
            if not port.optional:
                required.append(name)
        return {"type": "object", "properties": properties, "required": required}

    def output_ports(self) -> dict[str, PortType]:
        schema = self.schema() if self.check() == [] else {}
        required = set(schema.get("required", []))
        ports = {k: schema_port(v, k not in required) for k, v in schema.get("properties", {}).items()}
        return {**ports, "data": PortType("dict")}

    def describe(self) -> str:
        """How the expected object is explained to the model: its fields, one a line.

        A tiny model copies a raw JSON Schema instead of filling it, so even a schema is told as a list.
        """
        schema = self.schema()
        required = set(schema.get("required", []))
        lines = ["Answer with one JSON object with these fields:"]
        for name, prop in schema.get("properties", {}).items():
            kind = _kind(prop) + ("" if name in required else ", optional")
            lines.append(f"- {name} ({kind})" + (f": {prop['description']}" if prop.get("description") else ""))
        return "\n".join(lines)

    def opening(self) -> str:
        """How a completion-form answer starts: the object and its first field's name, for the model to go on."""
        properties = self.schema().get("properties", {})
        if not properties:
            return "{"
        first, prop = next(iter(properties.items()))
        # Never end on a space: the model's tokens carry their own leading space.
        return "{" + json.dumps(first) + (': "' if prop.get("type") == "string" and "enum" not in prop else ":")

    def problem(self, data: Any) -> str | None:
        """Why `data` is not acceptable, or None."""
        error = jsonschema.exceptions.best_match(
            jsonschema.validators.validator_for(self.schema())(self.schema()).iter_errors(data)
        )
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        return f"{where}: {error.message}" if where else error.message

    @staticmethod
    def method(ctx: NodeContext, form: Form) -> Method:
        """How the object is asked for: `tool` where the model picks tools natively (a forced call
        whose arguments are the object), `prefill` where a completion-form prompt would be sent as a
        user message but the provider continues an assistant turn (Anthropic's protocol), else
        `text` in the configured form. A reply that does not validate is sent back either way."""
        supports = getattr(ctx.llm, "supports", None)
        if supports is None:
            return "text"
        if supports("function_calling") is True:
            return "tool"
        return "prefill" if form == "completion" and supports("prefill") is True else "text"

    def answer_tool(self) -> dict[str, Any]:
        """The function the `tool` method forces a call of: its parameters are the object's schema."""
        parameters = {k: v for k, v in self.schema().items() if k != "$schema"}
        function = {"name": TOOL, "description": "Give the answer as one object.", "parameters": parameters}
        return {"type": "function", "function": function}

    def prompts(self, values: dict[str, Any], chat: bool) -> tuple[list[Message], str]:
        """The chat messages and the completion text that ask for the object (the text ends in `LABEL`)."""
        c = self.config
        preamble = "\n\n".join(
            p for p in (render(c.system, values), render(c.instructions, values), self.describe()) if p
        )
        messages = [Message("system", preamble)] if chat else []
        text = preamble
        for demo in c.demos:
            answer = json.dumps(demo["data"], ensure_ascii=False)
            if chat:
                messages += [Message("user", render(c.prompt, demo)), Message("assistant", answer)]
            else:
                text += f"\n\n{render(c.prompt, demo)}\n{LABEL} {answer}"
        question = render(c.prompt, values)
        messages.append(Message("user", question))
        return messages, f"{text}\n\n{question}\n{LABEL}"

    async def run(self, inputs: TemplateInputs, ctx: NodeContext) -> Outputs:
        c = self.config
        method = self.method(ctx, c.form)
        messages, text = self.prompts(inputs.values(), chat=c.form == "chat" or method == "tool")
        opening = self.opening()
        if method == "prefill":  # the completion prompt as a user turn, the answer begun as the assistant's
            messages = [Message("user", text), Message("assistant", opening)]
        text += f" {opening}"
        reply, problem = "", ""
        for _ in range(c.retries + 1):
            completion, reply = await self._ask(method, ctx, messages, text, opening)
            try:
                data = first_object(reply)
                found = self.problem(data)
            except ValueError as err:
                found = str(err)
            if found is None:
                return self._outputs(data)
            problem = found + (" (the reply was cut off at max_tokens)" if completion.finish_reason == "length" else "")
            retry = f"That reply is invalid: {problem}. Write the corrected JSON object."
            if method == "prefill":
                messages = [*messages[:-1], Message("assistant", reply), Message("user", retry), messages[-1]]
            else:
                messages += [Message("assistant", reply), Message("user", retry)]
            text += f"{reply[len(opening) :]}\nError: {problem}. Corrected:\n{LABEL} {opening}"
        shown = reply if len(reply) <= 500 else reply[:500] + "…"
        raise OutputError(
            f"no valid object after {c.retries + 1} tries: {problem}; last reply: {shown}", reply=reply, problem=problem
        )

    async def _ask(
        self, method: Method, ctx: NodeContext, messages: list[Message], text: str, opening: str
    ) -> tuple[Completion, str]:
        """One call by `method`; returns it and the reply as the object's text."""
        c, stop = self.config, ["\n\n", f"\n{LABEL}"]
        if method == "tool":
            forced = {"type": "function", "function": {"name": TOOL}}
            extra = {"tools": [self.answer_tool()], "tool_choice": forced}
            completion = await ctx.llm.complete(messages=messages, max_tokens=c.max_tokens, extra=extra)
            calls = [call for call in completion.tool_calls or [] if call.get("name") == TOOL]
            reply = json.dumps(calls[0].get("arguments"), ensure_ascii=False) if calls else completion.text.strip()
            return completion, reply
        if method == "prefill":
            completion = await ctx.llm.complete(messages=messages, stop=stop, max_tokens=c.max_tokens)
            reply = completion.text.rstrip()
            # a provider may answer with the whole object, the begun part repeated
            return completion, reply.lstrip() if reply.lstrip().startswith("{") else opening + reply
        if c.form == "chat":
            completion = await ctx.llm.complete(messages=messages, max_tokens=c.max_tokens)
            return completion, completion.text.strip()
        completion = await ctx.llm.complete(prompt=text, stop=stop, max_tokens=c.max_tokens)
        return completion, opening + completion.text.rstrip()

    def _outputs(self, data: dict[str, Any]) -> Outputs:
        if self.config.json_schema is None:
            data = {k: data.get(k) for k in self.config.fields}  # small models add fields nobody asked for
        ports = {k: v for k, v in data.items() if k != "data" and re.match(r"^[A-Za-z_]\w*$", k)}
        return self.Outputs(data=data, **ports)
