"""Outputs edited as text (the studio's review form) and read back as a correction."""

from __future__ import annotations

import json
from typing import Any

from studio.errors import InputError


def as_text(value: Any) -> str:
    """How an output is edited: a string as itself, anything else as JSON, nothing as empty text."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def correction(outputs: dict[str, Any], edited: dict[str, str]) -> dict[str, Any]:
    """The outputs whose text the reviewer changed, as values of the original's kind.

    A string (or a missing output) stays text unless it was edited into a JSON object or list;
    any other value must be edited as JSON. InputError names `correction.NAME` when it is not."""
    changed: dict[str, Any] = {}
    for name, text in edited.items():
        before = outputs.get(name)
        if text == as_text(before):
            continue
        if isinstance(before, str):
            changed[name] = text
        elif before is None:
            changed[name] = _json_or_text(text)
        else:
            try:
                changed[name] = json.loads(text)
            except json.JSONDecodeError as err:
                raise InputError(f"output {name!r} is not JSON: {err.msg}", field=f"correction.{name}") from None
    return changed


def _json_or_text(text: str) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    return value if isinstance(value, dict | list) else text
