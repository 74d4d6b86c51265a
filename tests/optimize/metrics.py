"""Metrics the bad-input tests name as `module:function`."""

from __future__ import annotations

from typing import Any


def always_zero(example: dict[str, Any], outputs: dict[str, Any]) -> float:
    """A broken metric: nothing can ever score."""
    return 0.0
