"""Prompt assembly shared by the LLM nodes: chat messages or one completion-style text."""

from __future__ import annotations

from typing import Any, Literal

from studio.node import Message, render

Form = Literal["chat", "completion"]


def chat_messages(
    system: str, prompt: str, demos: list[dict[str, Any]], output: str, values: dict[str, Any]
) -> list[Message]:
    """System message, then each demo as a user/assistant pair, then the real question."""
    messages = [Message("system", system)] if system else []
    for demo in demos:
        messages.append(Message("user", render(prompt, demo)))
        messages.append(Message("assistant", str(demo.get(output, ""))))
    messages.append(Message("user", render(prompt, values)))
    return messages


def history(values: dict[str, Any]) -> list[Message]:
    """The conversation wired to a node's optional `messages` input (empty when it is not)."""
    turns = values.get("messages")
    if not isinstance(turns, list):
        return []
    return [Message(t["role"], str(t["content"])) for t in turns if isinstance(t, dict)]


def transcript(turns: list[Message]) -> str:
    """A conversation as text lines (`User: ...`), for completion-style prompts."""
    return "\n".join(f"{m.role.title()}: {m.content}" for m in turns)


def completion_text(
    preamble: str, prompt: str, demos: list[dict[str, Any]], output: str, values: dict[str, Any]
) -> str:
    """One text the model continues: preamble, solved demos, then the open question."""
    parts = [preamble.strip()] if preamble.strip() else []
    for demo in demos:
        parts.append(render(prompt, demo) + " " + str(demo.get(output, "")))
    parts.append(render(prompt, values))
    return "\n\n".join(parts)
