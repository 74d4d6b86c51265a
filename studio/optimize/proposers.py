"""New instructions for a node: a deterministic library of rewrites, and a proposer model.

The library needs no model, so the search has moves even when the proposer is as weak as
the embedded model: an output-format constraint inferred from the expected values (digits,
a JSON object with the expected keys, one of a few labels, a few words), a label list, and a
brevity rule. The proposer model sees the node's role, its prompt and train examples the
flow got wrong and right (the MIPRO / GEPA idea of reflecting on failures), with the reviewer's
comment where the example came from a review (`flowstudio dataset from-reviews`), and writes new
instructions; it runs as a one-node flow under the experiment, so its calls are traced and
counted like every other.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from studio.evaluate.metrics import is_number, parse_json
from studio.optimize import instructions
from studio.optimize.candidates import TunableNode
from studio.optimize.demos import Trace
from studio.reviews.dataset import COMMENT_COLUMN

FEW_VALUES = 12
"""At most this many distinct expected values make a label list."""


@dataclass(frozen=True)
class Rewrite:
    """A change to one node's config, with its kind and a short description."""

    kind: str
    description: str
    config: dict[str, Any]


def _joined(current: str, addition: str) -> str:
    return f"{current.strip()} {addition}".strip() if addition not in current else current


def output_shape(values: list[Any]) -> str | None:
    """A format constraint the expected values all satisfy, in words; None when there is none."""
    texts = [v if isinstance(v, str) else json.dumps(v) for v in values if v is not None]
    if not texts:
        return None
    if all(is_number(t) for t in texts):
        return "Answer with the number only, in digits."
    objects = [_object(v) for v in values]
    if all(isinstance(o, dict) for o in objects):
        keys = list(dict.fromkeys(k for o in objects if isinstance(o, dict) for k in o))
        names = ", ".join(f'"{k}"' for k in keys)
        return f"Answer with one JSON object with the keys {names}, and nothing else."
    distinct = sorted(set(texts))
    if len(distinct) <= FEW_VALUES and len(distinct) <= len(texts) / 2:
        return f"Answer with one of: {', '.join(distinct)}."
    if sorted(len(t.split()) for t in texts)[len(texts) // 2] <= 5:
        return "Answer with a few words only."
    return None


def _object(value: Any) -> Any:
    try:
        return parse_json(value)
    except ValueError:
        return None


def library(node: TunableNode, expected: list[Any], current: dict[str, Any]) -> list[Rewrite]:
    """The deterministic rewrites that apply to a node, given its current config."""
    instructions = str(current.get("instructions") or "")
    rewrites = []
    if node.surface.labels:
        labels = ", ".join(current.get("labels") or [])
        rewrites.append(
            Rewrite("instructions", "label list", {"instructions": _joined(instructions, f"The labels are: {labels}.")})
        )
        rewrites.append(
            Rewrite(
                "instructions", "answer format", {"instructions": _joined(instructions, "Reply with the label only.")}
            )
        )
        shown = current.get("list_labels")
        for value in (True, False):
            if shown is not value:
                rewrites.append(Rewrite("format", f"list_labels: {str(value).lower()}", {"list_labels": value}))
        return rewrites
    shape = output_shape(expected)
    if shape:
        rewrites.append(Rewrite("instructions", "output format", {"instructions": _joined(instructions, shape)}))
    brief = "Be brief: answer in one line, without explanation."
    rewrites.append(Rewrite("instructions", "brevity", {"instructions": _joined(instructions, brief)}))
    stop = list(current.get("stop") or [])
    if "\n" not in stop:
        rewrites.append(Rewrite("format", "stop at the end of the first line", {"stop": [*stop, "\n"]}))
    return rewrites


Ask = Callable[[str], Awaitable[str | None]]
"""Sends one request to the proposer model; None when no call could be made."""


def request(node: TunableNode, current: dict[str, Any], traces: list[Trace], variant: int) -> str:
    """The proposer's prompt: the node's role and prompt, then failures and successes of the flow."""
    failures = [t for t in traces if t.score < 1.0][variant * 3 : variant * 3 + 3] or [
        t for t in traces if t.score < 1.0
    ][:3]
    successes = [t for t in traces if t.score >= 1.0][:2]
    lines = [
        "You improve the instructions of one step of an AI workflow.",
        f"Step: {node.id} ({node.type})",
        f"Current instructions: {current.get('instructions') or '(none)'}",
    ]
    if node.surface.labels:
        lines.append(f"It must answer with one of the labels: {', '.join(current.get('labels') or [])}.")
    else:
        lines.append(f"Its prompt: {current.get('prompt', '')}")
    for title, group in (("It got these wrong", failures), ("It got these right", successes)):
        if group:
            lines.append(f"{title}:")
            lines.extend(_example(t) for t in group)
    lines.append(
        "Write better instructions for this step, so that it gets such inputs right. "
        "Reply with the instructions only, in at most three sentences."
    )
    return "\n".join(lines)


def _example(trace: Trace) -> str:
    def short(value: Any) -> str:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 200 else text[:200] + "…"

    got = short(trace.outputs) if trace.outputs is not None else f"(failed: {short(trace.error or '')})"
    line = f"- input {short(trace.example.inputs)} → output {got}; expected {short(trace.example.expected)}"
    comment = trace.example.row.get(COMMENT_COLUMN)
    return f"{line}; the reviewer said: {short(comment)}" if isinstance(comment, str) and comment.strip() else line


def clean(reply: str, current: str) -> str | None:
    """Instructions from a proposer's reply (see `instructions.parse`); None when unusable."""
    parsed = instructions.parse(reply, request="", current=current, raced=[])
    return parsed.text if parsed.reason is None else None


@dataclass(frozen=True)
class Dropped:
    """A proposal dropped before it was raced, and why."""

    node: str
    text: str
    """What was left of the reply after parsing (may be empty)."""
    reason: str

    def as_json(self) -> dict[str, str]:
        """The report's row."""
        return {"node": self.node, "text": self.text, "reason": self.reason}


async def proposed(
    node: TunableNode,
    current: dict[str, Any],
    traces: list[Trace],
    ask: Ask,
    n: int,
    start: int = 0,
    raced: list[str] | None = None,
) -> tuple[list[Rewrite], list[Dropped]]:
    """Up to `n` instruction rewrites written by the proposer model, and the proposals dropped
    (`raced`: instructions already raced for this node, which a proposal must not repeat)."""
    rewrites: list[Rewrite] = []
    dropped: list[Dropped] = []
    known = list(raced or [])
    for variant in range(start, start + n):
        prompt = request(node, current, traces, variant)
        reply = await ask(prompt)
        if reply is None:
            break
        parsed = instructions.parse(reply, request=prompt, current=str(current.get("instructions") or ""), raced=known)
        if parsed.reason is not None:
            dropped.append(Dropped(node.id, parsed.text, parsed.reason))
            continue
        known.append(parsed.text)
        rewrites.append(Rewrite("instructions", f"proposed #{variant + 1}", {"instructions": parsed.text}))
    return rewrites, dropped
