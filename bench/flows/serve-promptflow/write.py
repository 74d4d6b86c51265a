"""bench/serve.py, Prompt flow side: the fake model, a fixed reply as Flowstudio's scripted model gives."""

from promptflow.core import tool


@tool
def write(request: str) -> str:
    return "a scripted headline"
