"""`control.switch`: route on a value to named branch ports; only the branch taken is active."""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from studio.node import ANY, Node, NodeContext, NodeError, PortType

_PORT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
BRANCH = "branch"


def case_key(value: Any) -> str:
    """How a value is matched against `cases`: text as it is, anything else as JSON (`true`, `3`)."""
    return value if isinstance(value, str) else json.dumps(value)


class Switch(Node):
    """One output port per branch (`$route.billing`); consumers of the branches not taken are skipped."""

    routes: ClassVar[bool] = True

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        cases: dict[str, str] = Field(min_length=1)
        """Value → branch name. Several values may share a branch; a value that is not text is
        matched as JSON (`true`, `3`)."""
        default: str | None = None
        """Branch taken by a value no case names; without one, such a value fails the node."""

    class Inputs(BaseModel):
        value: Any
        """What to route on (a label, a flag, a number)."""
        payload: Any = None
        """What the branch taken carries; the value itself when this is not wired."""

    class Outputs(BaseModel):
        model_config = ConfigDict(extra="allow")

        branch: str
        """The name of the branch taken (always active)."""

    config: Config

    def branches(self) -> list[str]:
        """Branch names in the order they are first named (cases, then default)."""
        named = [*self.config.cases.values(), *([self.config.default] if self.config.default else [])]
        return list(dict.fromkeys(named))

    def check(self) -> list[tuple[str, str]]:
        for key, name in [*((f"cases.{k}", v) for k, v in self.config.cases.items()), ("default", self.config.default)]:
            if name is None:
                continue
            if not _PORT.match(name):
                return [(key, f"branch name {name!r} is not a port name (letters, digits, _)")]
            if name == BRANCH:
                return [(key, f"branch name {BRANCH!r} is reserved for the output naming the branch taken")]
        return []

    def output_ports(self) -> dict[str, PortType]:
        return {BRANCH: PortType("str"), **{name: ANY for name in self.branches()}}

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        key = case_key(inputs.value)
        branch = self.config.cases.get(key, self.config.default)
        if branch is None:
            raise NodeError(
                f"no case for value {key!r} and no `default`; the cases are {sorted(self.config.cases)}",
                kind="no_branch",
            )
        carried = inputs.payload if "payload" in inputs.model_fields_set else inputs.value
        return self.Outputs(branch=branch, **{branch: carried})
