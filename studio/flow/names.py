"""Flow names in narrow places: a table column folds a name only after a dash, never inside a word."""

from __future__ import annotations

import re

_PARTS = re.compile(r"[^-]*-|[^-]+$")


def fold_at_dashes(name: str, width: int) -> str:
    """`name` on lines of at most `width` characters, broken only after a dash (a part longer than
    the width stays whole on its line; a table folds it only as a last resort)."""
    if len(name) <= width:
        return name
    lines = [""]
    for part in _PARTS.findall(name):
        if lines[-1] and len(lines[-1]) + len(part) > width:
            lines.append("")
        lines[-1] += part
    return "\n".join(lines)


def room(total: int, widths: list[int]) -> int:
    """What a table of `total` columns leaves one more column, the others `widths` wide, two apart."""
    return max(4, total - sum(widths) - 2 * len(widths))
