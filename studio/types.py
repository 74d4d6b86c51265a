"""Port types: a tiny type language shared by flow inputs and node ports.

`str`, `int`, `float`, `bool`, `dict`, `any`, `list`, `list[T]`, `messages` (a conversation: a
list of `{role, content}`), and `T | null` (optional). Node ports get theirs from the
annotations of the node's pydantic models.
"""

from __future__ import annotations

import functools
import json
import types
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from typing_extensions import TypedDict

if TYPE_CHECKING:
    from pydantic import TypeAdapter

_SCALARS: dict[str, type] = {"str": str, "int": int, "float": float, "bool": bool, "dict": dict}


class ChatTurn(TypedDict):
    """One turn of a conversation on a `messages` port."""

    role: Literal["system", "user", "assistant"]
    content: str


Messages = list[ChatTurn]
"""The annotation of a `messages` port."""


@dataclass(frozen=True)
class PortType:
    """A parsed port type."""

    name: str
    """`str`, `int`, `float`, `bool`, `dict`, `any` or `list`."""
    item: PortType | None = None
    """Element type of a list."""
    optional: bool = False
    """Whether null is a valid value."""

    def __str__(self) -> str:
        text = f"list[{self.item}]" if self.name == "list" and self.item else self.name
        return f"{text} | null" if self.optional else text

    def python(self) -> Any:
        """The Python annotation pydantic validates values with."""
        base: Any
        if self.name == "any":
            return Any
        if self.name == "list":
            base = list[self.item.python()] if self.item else list  # type: ignore[misc]
        elif self.name == "messages":
            base = Messages
        else:
            base = _SCALARS[self.name]
        return base | None if self.optional else base

    def adapter(self) -> TypeAdapter[Any]:
        """The pydantic adapter of `python()`, built once per port type (building one costs far
        more than a validation)."""
        return _adapter(self)


ANY = PortType("any")


@functools.lru_cache(maxsize=256)
def _adapter(port: PortType) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter  # pydantic loads when a value is first checked, not on import

    return TypeAdapter(port.python())


def parse_type(text: str) -> PortType:
    """Parse `list[str]`, `int | null` and the like; raises ValueError."""
    text = text.strip()
    if text.endswith("| null"):
        return _replace_optional(parse_type(text[: -len("| null")]))
    if text.startswith("list[") and text.endswith("]"):
        return PortType("list", parse_type(text[5:-1]))
    if text in _SCALARS or text in ("any", "list", "messages"):
        return PortType(text)
    raise ValueError(f"unknown type {text!r}; use str, int, float, bool, dict, list, list[T], messages, any")


def _replace_optional(port: PortType) -> PortType:
    return PortType(port.name, port.item, optional=True)


def from_annotation(annotation: Any) -> PortType:
    """The port type of a Python annotation on a node's Inputs or Outputs."""
    origin = typing.get_origin(annotation)
    if annotation is Any or annotation is object:
        return ANY
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        inner = from_annotation(members[0]) if len(members) == 1 else ANY
        return _replace_optional(inner)
    if origin is list or annotation is list:
        args = typing.get_args(annotation)
        if args and args[0] is ChatTurn:
            return PortType("messages")
        return PortType("list", from_annotation(args[0]) if args else None)
    if origin is dict or annotation is dict:
        return PortType("dict")
    for name, scalar in _SCALARS.items():
        if annotation is scalar:
            return PortType(name)
    return ANY


MESSAGES_SHAPE = "a list of {role, content} turns (role: system, user or assistant; content: text)"
"""What a value on a `messages` port looks like, in the words errors use."""


def expected(port: PortType) -> str:
    """What a port takes, for an error message: its type, spelled out for `messages`."""
    return f"{port}: {MESSAGES_SHAPE}" if port.name == "messages" else str(port)


def accepts(target: PortType, source: PortType) -> bool:
    """Whether a value of type `source` may be wired into a port of type `target`."""
    if target.name == "any" or source.name == "any":
        return True
    if source.name == "int" and target.name == "float":
        return True
    if "messages" in (target.name, source.name) and target.name != source.name:
        return _fits_messages(target if source.name == "messages" else source)
    if source.name != target.name:
        return False
    if target.name == "list" and target.item and source.item:
        return accepts(target.item, source.item)
    return True


def _fits_messages(other: PortType) -> bool:
    """A `messages` port exchanges values with untyped lists and `list[dict]`."""
    return other.name == "list" and (other.item is None or other.item.name in ("dict", "any"))


def type_of_value(value: Any) -> PortType:
    """The port type of a literal written in the flow file."""
    if value is None:
        return PortType("any", optional=True)
    for name, scalar in (("bool", bool), ("int", int), ("float", float), ("str", str), ("dict", dict)):
        if isinstance(value, scalar):
            return PortType(name)
    if isinstance(value, list):
        items = {str(type_of_value(v)) for v in value}
        return PortType("list", parse_type(items.pop()) if len(items) == 1 else None)
    return ANY


def value_from_text(text: str) -> Any:
    """A value typed on a command line or in a form: JSON when it parses (`true`, `3`, `["a"]`),
    else the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
