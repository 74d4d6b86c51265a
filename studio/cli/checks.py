"""Command-line values checked against the flow before anything runs: typed `-i` inputs, `--model` aliases."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from studio.errors import InputError
from studio.flow.spec import Flow
from studio.flow.values import MAX_DEPTH, json_depth
from studio.types import parse_type, value_from_text

EXTRA_ALIASES = ("judge", "proposer")
"""Aliases `batch` and `optimize` read besides the flow's own, which `--model` may add."""


def typed_inputs(flow: Flow, texts: Mapping[str, str]) -> dict[str, Any]:
    """`-i NAME=VALUE` values: the text as typed for a `str` input, JSON (else text) for the others."""
    values: dict[str, Any] = {}
    for name, text in texts.items():
        spec = flow.spec.inputs.get(name)
        if spec is not None and _is_text(spec.type):
            values[name] = text
        elif json_depth(text) > MAX_DEPTH:
            raise InputError(f"-i {name}: JSON nested deeper than {MAX_DEPTH} levels", field="-i")
        else:
            values[name] = value_from_text(text)
    return values


def _is_text(type_text: str) -> bool:
    try:
        port = parse_type(type_text)
    except ValueError:
        return False
    return port.name == "str"


def check_aliases(flow: Flow, overrides: Mapping[str, str], extra: Iterable[str | None] = ()) -> None:
    """Refuse a `--model ALIAS=MODEL` whose alias the flow does not define (a typo would be ignored)."""
    known = set(flow.spec.models)
    allowed = known | {a for a in extra if a}
    for alias in overrides:
        if alias in allowed:
            continue
        close = difflib.get_close_matches(alias, sorted(known | allowed), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        defined = ", ".join(sorted(known)) or "none"
        raise InputError(
            f"--model {alias}=...: the flow has no model alias {alias!r}; {hint}its aliases: {defined}",
            file=flow.file,
            field="--model",
        )
