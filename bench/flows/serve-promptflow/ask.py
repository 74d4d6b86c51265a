"""bench/serve.py, Prompt flow side: the first template."""

from promptflow.core import tool


@tool
def ask(topic: str) -> str:
    return f"Write a headline about {topic}."
