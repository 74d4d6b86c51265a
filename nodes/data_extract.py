"""`data.extract`: pick a value out of JSON data with a JMESPath expression."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import jmespath
from jmespath.exceptions import JMESPathError
from pydantic import BaseModel, ConfigDict

from studio.node import Node, NodeContext, NodeError, Role


class Extract(Node):
    """Read one value from JSON data (`items[0].name`, `people[?age > \\`30\\`].name`)."""

    starter = {"path": "value"}
    roles: ClassVar[frozenset[Role]] = frozenset({"extract"})

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        path: str
        """JMESPath expression (jmespath.org), e.g. `user.name` or `items[*].id`."""
        required: bool = False
        """Fail the node when the path finds nothing (null), instead of passing null on."""

    class Inputs(BaseModel):
        data: Any
        """JSON data: a mapping or a list, or text holding JSON."""

    class Outputs(BaseModel):
        value: Any
        """What the path found; null when it found nothing."""

    config: Config

    def check(self) -> list[tuple[str, str]]:
        try:
            jmespath.compile(self.config.path)
        except JMESPathError as err:
            return [("path", f"invalid JMESPath expression: {err}")]
        return []

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        data = inputs.data
        if isinstance(data, str) and data.strip()[:1] in ("{", "["):
            try:
                data = json.loads(data)
            except json.JSONDecodeError as err:
                raise NodeError(f"data is text but not valid JSON: {err}", kind="bad_input") from None
        value = jmespath.search(self.config.path, data)
        if value is None and self.config.required:
            raise NodeError(f"path {self.config.path!r} found nothing", kind="not_found")
        return self.Outputs(value=value)
