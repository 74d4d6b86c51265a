"""bench/serve.py, Prompt flow side: the last template."""

from promptflow.core import tool


@tool
def shout(draft: str) -> str:
    return draft.upper() + "!"
