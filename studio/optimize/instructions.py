"""A proposer's reply parsed into instruction text, or the reason it is no instruction at all.

Models asked for "the instructions only" still answer with preambles ("Here's the revised
instructions:"), quotes, markdown and commentary after the text. The parse keeps the
instruction itself; what is left must be a usable instruction that is neither a restatement of
the request nor a near-duplicate of one already raced, else it is dropped before it costs a call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

MAX_CHARS = 500
MIN_CHARS = 8
NEAR_DUPLICATE = 0.9
"""Two instructions at least this similar (character ratio, case and spacing ignored) are one."""

_INTRO = re.compile(
    r"^.*?\b(?:here(?:'s| is| are)|below (?:is|are)|revised|improved|updated|rewritten|new|better|"
    r"following)\b[^:\n]{0,80}\binstructions?\b[^:\n]{0,40}:\s*",
    re.IGNORECASE | re.DOTALL,
)
_LABEL = re.compile(r"^(?:(?:new|better|revised|improved|updated)\s+)?instructions?\s*:\s*", re.IGNORECASE)
_META_START = re.compile(
    r"^(?:sure|certainly|of course|okay|ok|absolutely|great|to improve|to make|i(?:'ll| will| would| have|'ve)|"
    r"let me|here(?:'s| is| are)|below|the (?:revised|improved|new|updated) instructions?)\b",
    re.IGNORECASE,
)
_COMMENTARY = re.compile(
    r"^(?:this|these|the (?:above|revised|new|updated)|note|explanation|i |i'|hope|let me know|"
    r"by |with these|changes?|why)\b",
    re.IGNORECASE,
)
_MARKUP = re.compile(r"(\*\*|__|`+|^#+\s*|^\s*(?:[-*•]|\d+[.)])\s+)", re.MULTILINE)
_QUOTES = "\"'\u201c\u201d\u2018\u2019\u00ab\u00bb"


@dataclass(frozen=True)
class Parsed:
    """An instruction, or why the reply held none (`text` is then what was left of it)."""

    text: str
    reason: str | None = None
    """None when `text` is a usable instruction; else why it was dropped, in words."""


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def _strip_intro(text: str) -> str:
    """Everything up to an introduction ending in a colon ("Here's the revised instructions:")."""
    match = _INTRO.match(text)
    if match and match.end() < len(text):
        text = text[match.end() :]
    paragraphs = _paragraphs(text)
    while len(paragraphs) > 1 and _META_START.match(paragraphs[0]):
        paragraphs.pop(0)  # "To improve them, I'll rephrase them." standing on its own
    return "\n\n".join(paragraphs)


def _unwrap(text: str) -> str:
    text = _MARKUP.sub("", text)
    text = _LABEL.sub("", text.strip())
    text = " ".join(text.split())
    while len(text) > 1 and text[0] in _QUOTES and text[-1] in _QUOTES:
        text = text[1:-1].strip()
    return text.strip(_QUOTES + " ").strip()


def _without_commentary(text: str) -> str:
    """The first paragraph that is not meta-text: commentary after the instruction goes."""
    paragraphs = _paragraphs(text)
    kept = [p for p in paragraphs if not _COMMENTARY.match(_unwrap(p)) and not _META_START.match(_unwrap(p))]
    return kept[0] if kept else (paragraphs[0] if paragraphs else "")


def _cap(text: str) -> str:
    if len(text) <= MAX_CHARS:
        return text
    sentences = re.split(r"(?<=[.!?])\s+", text[:MAX_CHARS])
    return " ".join(sentences[:-1]) if len(sentences) > 1 else text[:MAX_CHARS].rsplit(" ", 1)[0]


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def similar(a: str, b: str) -> bool:
    """Whether two instructions say the same thing in nearly the same words."""
    left, right = _normal(a), _normal(b)
    return left == right or SequenceMatcher(None, left, right).ratio() >= NEAR_DUPLICATE


def _restates(text: str, request: str) -> bool:
    """Whether the text is a piece of the request it answers (a line of it, or the current prompt)."""
    norm = _normal(text)
    lines = [_normal(line.split(":", 1)[-1]) for line in request.splitlines()]
    return norm in _normal(request) or any(line and similar(norm, line) for line in lines)


def parse(reply: str, *, request: str, current: str, raced: list[str]) -> Parsed:
    """The instruction in a proposer's reply, checked against the request, the node's current
    instructions and every instruction already raced for the node."""
    text = _cap(_unwrap(_without_commentary(_strip_intro(reply.strip()))))
    if not text:
        return Parsed(text, "empty")
    if len(text) < MIN_CHARS:
        return Parsed(text, "too short to be an instruction")
    if "{{" in text or "{%" in text:
        return Parsed(text, "template syntax")
    if _META_START.match(text) or text.endswith(":"):
        return Parsed(text, "meta-text, not an instruction")
    if current.strip() and similar(text, current):
        return Parsed(text, "the current instructions again")
    if _restates(text, request):
        return Parsed(text, "restates the request")
    if any(similar(text, other) for other in raced):
        return Parsed(text, "near-duplicate of one already raced")
    return Parsed(text)
