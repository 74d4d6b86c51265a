"""Guards on values users hand in (run inputs, JSON on the command line): nesting depth.

Python's JSON decoder, pydantic and `copy.deepcopy` recurse once per level, so deeply nested
input would end in a RecursionError traceback; it is refused first, with one line.
"""

from __future__ import annotations

import json
from typing import Any

from studio.errors import InputError

MAX_DEPTH = 64


def json_depth(text: str) -> int:
    """The deepest bracket nesting of JSON text (strings skipped), without parsing it."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def load_json(text: str, what: str) -> Any:
    """Parse JSON handed in by a user; InputError (one line) when it is invalid or nested too deeply."""
    if json_depth(text) > MAX_DEPTH:
        raise InputError(f"JSON nested deeper than {MAX_DEPTH} levels", field=what)
    try:
        return json.loads(text)
    except ValueError as err:
        raise InputError(f"not valid JSON: {err}", field=what) from None


def check_depth(value: Any, what: str) -> None:
    """Refuse a value (dicts and lists) nested deeper than MAX_DEPTH; walks without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                raise InputError(f"value nested deeper than {MAX_DEPTH} levels", field=what)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
