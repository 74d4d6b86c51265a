"""`llm.structured`: one JSON object, validated against a field list or a JSON Schema.

In completion form (the default, which small models follow best) the prompt lists the fields
and ends in `JSON: {"first_field":`, so the model only continues an object. A reply that does not parse or validate is sent back
with the problem, up to `retries` times; then the node fails with an OutputError that shows
the last reply. A field list also gives each field its own typed output port.

Where the model picks tools natively, the object is asked for as a forced call of one function
whose parameters are the schema. On a provider that sends a completion prompt as a user message
but continues an assistant turn (Anthropic's protocol), the completion form is sent as a chat
whose assistant turn begins the object (a prefill). The object's handling is `nodes.json_object`'s,
the repair loop `nodes.json_repair`'s.
"""

from __future__ import annotations

import re
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict, Field

from nodes.json_object import field_schema, first_object, schema_port
from nodes.json_repair import ask_object
from nodes.prompting import Form
from studio.node import Node, NodeContext, OptionalVariables, PortType, TemplateInputs, parse_type

__all__ = ["FieldSpec", "Structured", "first_object"]


class FieldSpec(BaseModel):
    """One field of the object."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    type: str = "str"
    """Port type: str, int, float, bool, dict, list, list[T] or any; `T | null` makes it optional."""
    description: str = ""
    """What the field holds; shown to the model."""


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

    async def run(self, inputs: TemplateInputs, ctx: NodeContext) -> Outputs:
        return self._outputs(await ask_object(self.config, self.schema(), inputs.values(), ctx))

    def _outputs(self, data: dict[str, Any]) -> Outputs:
        if self.config.json_schema is None:
            data = {k: data.get(k) for k in self.config.fields}  # small models add fields nobody asked for
        ports = {k: v for k, v in data.items() if k != "data" and re.match(r"^[A-Za-z_]\w*$", k)}
        return self.Outputs(data=data, **ports)
