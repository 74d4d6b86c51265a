"""Schema errors in the user's words: an unknown key first, with the known key it was meant to be."""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails


def first_problem(problems: Sequence[ErrorDetails]) -> ErrorDetails:
    """The error to show: a misspelt key explains the "field required" next to it, so it goes first."""
    for problem in problems:
        if problem["type"] == "extra_forbidden":
            return problem
    return problems[0]


def unknown_key(model: type[BaseModel], path: Sequence[str | int], what: str = "field") -> str:
    """`unknown field 'lables' (did you mean 'labels'?)` for the key at the end of `path` under `model`."""
    key = str(path[-1])
    known = fields_at(model, path[:-1])
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if close:
        return f"unknown {what} {key!r} (did you mean {close[0]!r}?)"
    return f"unknown {what} {key!r}; known: {', '.join(known)}" if known else f"unknown {what} {key!r}"


def fields_at(model: type[BaseModel], path: Sequence[str | int]) -> list[str]:
    """The keys (and aliases) the mapping at `path` under `model` accepts; empty when it is not a model."""
    current: Any = model
    for part in path:
        current = _step(current, part)
        if current is None:
            return []
    if not (isinstance(current, type) and issubclass(current, BaseModel)):
        return []
    names: list[str] = []
    for name, info in current.model_fields.items():
        names.append(info.alias or name)
    return names


def _step(annotation: Any, part: str | int) -> Any:
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        for name, info in annotation.model_fields.items():
            if part in (name, info.alias):
                return info.annotation
        return None
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is dict and len(args) == 2:
        return args[1]
    if origin is list and args and isinstance(part, int):
        return args[0]
    return None


def _unwrap(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        models = [a for a in members if isinstance(a, type) and issubclass(a, BaseModel)]
        if models:
            return models[0]
        if len(members) == 1:
            return members[0]
    return annotation
