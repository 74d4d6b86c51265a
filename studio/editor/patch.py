"""Carry an edit over to a hand-formatted file, so that only the edited lines change.

ruamel.yaml writes a canonical layout; a file written by hand may differ (indentation, blank
lines). An edit is the difference between two canonical dumps; this applies that difference
to the original text wherever the lines around it can be found there, and otherwise gives up
and returns the canonical text.
"""

from __future__ import annotations

from difflib import SequenceMatcher


def _line_map(canonical: list[str], original: list[str]) -> dict[int, int]:
    """Canonical line index → original line index, for lines the two texts share."""
    mapping = {}
    for block in SequenceMatcher(None, canonical, original, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            mapping[block.a + k] = block.b + k
    return mapping


def carry_over(original: str, before: str, after: str) -> str:
    """`original` changed the way `before` (its canonical form) changed into `after`."""
    if original == before:
        return after
    old, new, text = (
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        original.splitlines(keepends=True),
    )
    mapping = _line_map(old, text)
    result, cursor = [], 0
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        start = 0 if i1 == 0 else mapping.get(i1 - 1, -2) + 1
        end = len(text) if i2 == len(old) else mapping.get(i2, -1)
        if start < cursor or end < start:
            return after  # the change's surroundings are not in the original: write the canonical text
        result += [*text[cursor:start], *new[j1:j2]]
        cursor = end
    return "".join([*result, *text[cursor:]])
