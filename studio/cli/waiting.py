"""A run waiting for a person: what it asks, the type it expects, and the command that answers."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from studio.types import parse_type, value_from_text

SUB_FLOW_WAITING = "sub-flow is waiting for input"
EXAMPLES = {"bool": "true", "int": "1", "float": "1.0", "dict": "'{}'", "list": "'[]'"}


@dataclass(frozen=True)
class Question:
    """One waiting `human.input` node of a run."""

    node: str
    """The node path `--value` names."""
    prompt: str
    """What the person is asked, rendered."""
    value_type: str | None
    """The expected type (`schema:`), when the node is in the run's own flow."""


def questions(store: Any, run_id: str) -> list[Question]:
    """The waiting questions of a run, in the order the steps were recorded."""
    from studio.flow.spec import load_flow_text

    last = {step.node: step for step in store.steps(run_id)}
    text = store.flow_text(run_id)
    nodes = load_flow_text(text).spec.nodes if text else {}
    found = []
    for path, step in last.items():
        if step.status != "waiting" or (step.error or "").startswith(SUB_FLOW_WAITING):
            continue
        spec = nodes.get(path)
        value_type = str(spec.config.get("schema", "str")) if spec is not None else None
        found.append(Question(path, step.error or "", value_type))
    return found


def resume_command(run_id: str, question: Question, db: str | None) -> str:
    """The exact `flowstudio resume` line that answers `question` (with an example value)."""
    example = EXAMPLES.get(_base(question.value_type), "'your answer'")
    where = f" --db {shlex.quote(db)}" if db else ""
    return f"flowstudio resume {run_id}{where} --value {question.node}={example}"


def explain(store: Any, run_id: str, db: str | None) -> list[str]:
    """Lines for people: each question, its type, and how to answer it."""
    lines = []
    for question in questions(store, run_id):
        lines.append(f"{question.node} asks: {question.prompt}")
        if question.value_type:
            lines.append(f"  expects: {question.value_type}")
        lines.append(f"  answer with: {resume_command(run_id, question, db)}")
    return lines


def typed_values(store: Any, run_id: str, texts: dict[str, str]) -> dict[str, Any]:
    """`--value NODE=VALUE`: the text as typed for a `str` question, JSON (else text) for the others."""
    types = {q.node: q.value_type for q in questions(store, run_id)}
    return {node: text if _base(types.get(node)) == "str" else value_from_text(text) for node, text in texts.items()}


def _base(value_type: str | None) -> str:
    if value_type is None:
        return "any"
    try:
        return parse_type(value_type).name
    except ValueError:
        return "any"
