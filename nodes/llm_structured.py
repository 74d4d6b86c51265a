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
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from nodes import strategies, structured_cascade
from nodes.json_object import FieldSpec, fields_problem, fields_schema, first_object, schema_port, schema_problem
from nodes.json_repair import ask_object
from nodes.prompting import Form
from studio.node import Node, NodeContext, OptionalVariables, PortType, Role, TemplateInputs, Tunable

__all__ = ["FieldSpec", "Structured", "first_object"]


class Structured(Node):
    """Ask the model for a JSON object and validate it."""

    uses_model = True
    starter = {"prompt": "{{ text }}", "fields": {"answer": "str"}}
    scripted_replies = "a JSON object the fields validate"
    tunable = Tunable(
        fields=("strategy", "samples", "teacher", "agree"),
        output="data",
        default_form="completion",
        strategies=("single", "cascade"),
    )
    roles: ClassVar[frozenset[Role]] = frozenset({"structured"})

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
        strategy: Literal["single", "cascade"] = "single"
        """`single` (one object, invalid replies sent back); `cascade` (the node's model samples
        `samples` objects given the teacher's nearest past objects as demos; when fewer than `agree`
        are the same object, the `teacher` alias answers and its object is kept as a demo)."""
        samples: int = Field(default=3, ge=1, le=15)
        """`cascade`: how many objects the student samples."""
        teacher: str = ""
        """`cascade`: the teacher's model alias (the node's own model is the student)."""
        agree: int = Field(default=2, ge=1, le=15)
        """`cascade`: how many student samples must be the same object for it to stand."""
        recall: int = Field(default=4, ge=0, le=20)
        """`cascade`: how many of the teacher's past objects (nearest to the input) the student gets as demos."""

    Inputs = TemplateInputs

    class Outputs(BaseModel):
        model_config = ConfigDict(extra="allow")

        data: dict[str, Any]
        """The validated object; each listed field is also an output of its own."""

    config: Config

    def model_calls(self) -> float:
        return strategies.calls(self.config.strategy, self.config.samples)

    def model_aliases(self) -> list[tuple[str, str]]:
        return [("teacher", self.config.teacher)] if self.config.strategy == "cascade" else []

    def cascade_query(self, values: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """What a cascade's memory keeps an object under: the rendered prompt, and the input values."""
        return structured_cascade.question(self.config.prompt, values)

    def templates(self) -> list[tuple[str, str]]:
        c = self.config
        return [("prompt", c.prompt), ("system", c.system), ("instructions", c.instructions)]

    def check(self) -> list[tuple[str, str]]:
        c = self.config
        if bool(c.fields) == (c.json_schema is not None):
            return [("fields", "give either `fields` or `json_schema`")]
        if c.strategy == "cascade" and not c.teacher:
            return strategies.check_cascade(c.strategy, c.teacher)
        if wrong_field := fields_problem(c.fields):
            return [wrong_field]
        if c.json_schema is not None and (wrong := schema_problem(c.json_schema)):
            return [("json_schema", wrong)]
        problems = [(f"demos.{i}", "a demo needs a `data` object") for i, d in enumerate(c.demos) if "data" not in d]
        return problems[:1]

    def schema(self) -> dict[str, Any]:
        """The JSON Schema replies are validated against."""
        return self.config.json_schema if self.config.json_schema is not None else fields_schema(self.config.fields)

    def output_ports(self) -> dict[str, PortType]:
        schema = self.schema() if self.check() == [] else {}
        required = set(schema.get("required", []))
        ports = {k: schema_port(v, k not in required) for k, v in schema.get("properties", {}).items()}
        return {**ports, "data": PortType("dict")}

    async def run(self, inputs: TemplateInputs, ctx: NodeContext) -> Outputs:
        if self.config.strategy == "cascade":
            return self._outputs(await structured_cascade.cascade(self.config, self.schema(), inputs.values(), ctx))
        return self._outputs(await ask_object(self.config, self.schema(), inputs.values(), ctx))

    def _outputs(self, data: dict[str, Any]) -> Outputs:
        if self.config.json_schema is None:
            data = {k: data.get(k) for k in self.config.fields}  # small models add fields nobody asked for
        ports = {k: v for k, v in data.items() if k != "data" and re.match(r"^[A-Za-z_]\w*$", k)}
        return self.Outputs(data=data, **ports)
