"""Secrets: `$env.NAME` values are remembered when read and masked wherever data is kept or shown.

A flow names secrets only as `$env.NAME`; `credential_in` spots a credential written as a
literal (known key prefixes, `Bearer <token>`). Every value read through `reveal` is
remembered for the life of the process, and `mask` replaces it (in strings, nested in dicts
and lists) with `***`: the stores mask what they write, the CLI what it prints, so a key the
provider or an HTTP server echoes back never reaches a trace, a report, an export or a log.
`escape_controls` makes data safe to print to a terminal.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

MASK = "***"
MIN_SECRET_CHARS = 4
"""Shorter values are not masked (masking `1` everywhere would garble data and reveal little)."""

_CREDENTIAL = re.compile(
    r"(?<![A-Za-z0-9])("
    r"sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}|sk_(?:live|test)_[A-Za-z0-9]{16,}|rk_live_[A-Za-z0-9]{16,}"
    r"|xox[abpr]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{30,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_\-]{20,}|hf_[A-Za-z0-9]{20,}"
    r"|Bearer\s+(?!\$env\.)[A-Za-z0-9._~+/\-]{16,}=*"
    r")"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

_known: set[str] = set()
_lock = threading.Lock()


def credential_in(text: str) -> str | None:
    """The credential-looking part of `text` (shortened), or None."""
    found = _CREDENTIAL.search(text)
    return None if found is None else found.group(1)[:12] + "…"


def reveal(name: str) -> str | None:
    """The environment's value of NAME (None when unset), remembered so that it is masked."""
    value = os.environ.get(name)
    if value is not None:
        remember(value)
    return value


def remember(value: str) -> None:
    """Mask `value` from now on."""
    if len(value) >= MIN_SECRET_CHARS:
        with _lock:
            _known.add(value)


def mask(value: Any) -> Any:
    """`value` with every remembered secret replaced by `***` (strings, dict keys and values, lists)."""
    if not _known:
        return value
    return _mask(value, sorted(_known, key=len, reverse=True))


def masked_copy(value: Any) -> Any:
    """A copy of a JSON-like value (new dicts and lists all the way down; strings and numbers are
    immutable) with every remembered secret masked: what a store keeps of a value handed to it, so
    that neither a later change by the caller nor a secret reaches what it stores."""
    if not _known:
        return _copy(value)
    return _mask(value, sorted(_known, key=len, reverse=True))


_ATOMIC = frozenset({str, int, float, bool, type(None)})
"""Types whose values are immutable leaves: kept as they are, without a call per value."""


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: item if type(item) in _ATOMIC else _copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [item if type(item) in _ATOMIC else _copy(item) for item in value]
    return value


def _mask(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        return value
    if isinstance(value, dict):
        return {_mask(k, secrets): _mask(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_mask(v, secrets) for v in value]
    return value


def escape_controls(text: str) -> str:
    """Control characters (escape sequences, bidi overrides) as visible `\\x1b`-style escapes; keeps \\n and \\t."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
