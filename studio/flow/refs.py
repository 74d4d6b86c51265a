"""References: `$node.port` and `$inputs.name` values are the edges of the graph."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_REF = re.compile(r"^\$([a-z][a-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$")
FLOW_INPUTS = "inputs"


@dataclass(frozen=True)
class Ref:
    """A typed wire from `node`'s output `port` (node `inputs` means a flow input)."""

    node: str
    port: str

    def __str__(self) -> str:
        return f"${self.node}.{self.port}"


def parse_value(value: Any) -> Any:
    """Replace reference strings by `Ref`s (inside lists and mappings too); unescape `$$`."""
    if isinstance(value, str):
        match = _REF.match(value)
        if match:
            return Ref(match.group(1), match.group(2))
        if value.startswith("$$"):
            return value[1:]
        return value
    if isinstance(value, list):
        return [parse_value(v) for v in value]
    if isinstance(value, dict):
        return {k: parse_value(v) for k, v in value.items()}
    return value


def looks_like_ref(value: Any) -> bool:
    """A `$name...` string that is not a valid reference (a likely typo)."""
    return isinstance(value, str) and bool(re.match(r"^\$[A-Za-z]", value)) and not _REF.match(value)


def refs_in(value: Any) -> list[Ref]:
    """Every reference inside a parsed value."""
    if isinstance(value, Ref):
        return [value]
    if isinstance(value, list):
        return [r for v in value for r in refs_in(v)]
    if isinstance(value, dict):
        return [r for v in value.values() for r in refs_in(v)]
    return []


def substitute(value: Any, lookup: Callable[[Ref], Any]) -> Any:
    """Replace every `Ref` in a parsed value by `lookup(ref)`."""
    if isinstance(value, Ref):
        return lookup(value)
    if isinstance(value, list):
        return [substitute(v, lookup) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, lookup) for k, v in value.items()}
    return value
