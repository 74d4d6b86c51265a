"""The chat endpoint hands a flow whose input is `messages` the whole conversation (chat.append's
port type), so a flow can answer from what was said before, not only from the last message."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from tests.serve.conftest import Server, serve_command

CONVERSATION = """flowstudio: 1
name: remember
description: Answers from the whole conversation.
inputs:
  history: {type: messages, description: The conversation so far}
outputs:
  answer: $reply.text
models:
  default:
    model: scripted
    script:
      - {match: "(?is)my name is Ada.*what is my name", reply: "Your name is Ada."}
      - {reply: "I do not know your name."}
nodes:
  reply:
    type: llm.generate
    inputs: {messages: $inputs.history}
    config: {form: chat, prompt: ""}
"""


@pytest.mark.slow
def test_a_messages_flow_gets_the_whole_conversation(tmp_path: Path) -> None:
    folder = tmp_path / "flows"
    folder.mkdir()
    (folder / "remember.yaml").write_text(CONVERSATION, encoding="utf-8")
    server = Server(serve_command(folder, tmp_path / "runs.db")).start()
    try:
        chat = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        said = [
            {"role": "user", "content": "Hello, my name is Ada."},
            {"role": "assistant", "content": "Hello Ada."},
            {"role": "user", "content": "What is my name?"},
        ]
        answer = chat.chat.completions.create(model="remember", messages=said)  # type: ignore[arg-type]
        assert answer.choices[0].message.content == "Your name is Ada."
        alone = chat.chat.completions.create(model="remember", messages=said[-1:])  # type: ignore[arg-type]
        assert alone.choices[0].message.content == "I do not know your name."
    finally:
        server.stop()
