"""Checks on a whole flow document beyond its schema: literal credentials, input defaults."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

from studio.errors import SpecError
from studio.flow.loader import Document, PathKey
from studio.secrets import credential_in
from studio.types import parse_type


def check_document(document: Document) -> None:
    """Refuse a credential written as a literal anywhere in the flow; raises SpecError."""
    for path, text in _strings(document.data, ()):
        found = credential_in(text)
        if found is not None:
            field = ".".join(str(p) for p in path)
            raise SpecError(
                f"a literal API key or token ({found}) is not allowed in a flow; "
                "write $env.NAME and set NAME in the environment",
                file=document.file,
                line=document.line_of(path),
                field=field or None,
            )


def check_defaults(document: Document, inputs: dict[str, Any]) -> None:
    """Each input's `default` must have the input's declared type (null is always allowed)."""
    for name, spec in inputs.items():
        if "default" not in spec.model_fields_set or spec.default is None:
            continue
        try:
            port = parse_type(spec.type)
            TypeAdapter(port.python()).validate_python(spec.default, strict=True)
        except ValueError as err:
            message = err.errors(include_url=False)[0]["msg"] if isinstance(err, ValidationError) else str(err)
            raise SpecError(
                f"default {spec.default!r} is not a {spec.type}: {message}",
                file=document.file,
                line=document.line_of(("inputs", name, "default")),
                field=f"inputs.{name}.default",
            ) from None


def _strings(value: Any, path: PathKey) -> list[tuple[PathKey, str]]:
    """Every string in the document (keys included), with where it is."""
    found: list[tuple[PathKey, str]] = []
    if isinstance(value, str):
        found.append((path, value))
    elif isinstance(value, dict):
        for key, item in value.items():
            found.append(((*path, key), key))
            found += _strings(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _strings(item, (*path, index))
    return found
