"""`/v1/chat/completions` with the official `openai` client, retries on: a failing flow runs once,
`/v1/models` lists only flows that can answer a chat, and nothing a request says is dropped."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from studio.flow.spec import load_flow_text
from studio.runtime.compiler import compile_flow
from studio.serve.catalog import ServedFlow
from studio.serve.chat import ChatRefused, ChatShape, Message, chat_inputs, chat_shape
from tests.serve.conftest import SERVE_FLOWS, Server, serve_command

ASSISTANT = """flowstudio: 1
name: assistant
description: Answers with the system message and the earlier turns in view.
inputs:
  question: {type: str}
  system: {type: str, default: Be helpful.}
  history: {type: messages, default: []}
outputs:
  answer: $reply.text
models:
  default:
    model: scripted
    script:
      - {match: "(?is)like a pirate.*my name is Ada.*what is my name", reply: "Arr, your name be Ada."}
      - {match: "(?is)my name is Ada.*what is my name", reply: "Your name is Ada."}
      - {reply: "I do not know."}
nodes:
  reply:
    type: llm.generate
    inputs: {messages: $inputs.history, question: $inputs.question, persona: $inputs.system}
    config: {form: chat, system: "{{ persona }}", prompt: "{{ question }}"}
"""

ASKED = [{"role": "user", "content": "capital of France?"}]
EARLIER = [
    {"role": "user", "content": "Hello, my name is Ada."},
    {"role": "assistant", "content": "Hello Ada."},
    {"role": "user", "content": "What is my name?"},
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    base = tmp_path_factory.mktemp("chat")
    shutil.copytree(SERVE_FLOWS, base / "flows")
    (base / "flows" / "assistant.yaml").write_text(ASSISTANT, encoding="utf-8")
    server = Server(serve_command(base / "flows", base / "runs.db")).start()
    with server.client() as client:
        assert client.get("/healthz").status_code == 200  # the store is open once the app answers
    yield server, base / "runs.db"
    server.stop()


def runs_in(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT run_id, status FROM runs ORDER BY started_at").fetchall()


def client_of(server: Server) -> openai.OpenAI:
    """The client as users make it: its default retries (2) are on."""
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused")


@pytest.mark.slow
def test_a_failing_flow_is_one_run_and_an_openai_error_the_client_does_not_retry(served: tuple[Server, Path]) -> None:
    server, db = served
    before = runs_in(db)
    with pytest.raises(openai.APIStatusError) as failed:
        client_of(server).chat.completions.create(model="reply", messages=[{"role": "user", "content": "fail"}])
    new = runs_in(db)[len(before) :]
    assert len(new) == 1 and new[0][1] == "failed", new
    error = failed.value
    assert 400 <= error.status_code < 500 and error.status_code not in (408, 409, 429)
    assert error.response.headers["x-should-retry"] == "false"
    body = error.response.json()["error"]
    assert set(body) >= {"message", "type", "code"} and body["code"] == "run_failed"
    assert new[0][0] in body["message"] and "auth" in body["message"]

    with pytest.raises(openai.APIError) as streamed:
        stream = client_of(server).chat.completions.create(
            model="reply",
            messages=[{"role": "user", "content": "fail again"}],
            stream=True,
        )
        list(stream)
    newer = runs_in(db)[len(before) + 1 :]
    assert len(newer) == 1 and newer[0][0] in str(streamed.value.message)


@pytest.mark.slow
def test_models_lists_only_flows_that_can_answer_a_chat(served: tuple[Server, Path]) -> None:
    server, db = served
    chat = client_of(server)
    assert [model.id for model in chat.models.list()] == ["assistant", "reply"]  # not approval (human.input), not steps
    before = runs_in(db)
    with pytest.raises(openai.BadRequestError) as waits:
        chat.chat.completions.create(model="approval", messages=ASKED)  # type: ignore[arg-type]
    assert "waits for a person at node 'approve'" in waits.value.message
    with pytest.raises(openai.BadRequestError):
        chat.chat.completions.create(model="steps", messages=ASKED)  # type: ignore[arg-type]
    with pytest.raises(openai.NotFoundError):
        chat.chat.completions.create(model="nope", messages=ASKED)  # type: ignore[arg-type]
    assert runs_in(db) == before


@pytest.mark.slow
def test_system_message_and_earlier_turns_go_to_the_inputs_the_flow_declares(served: tuple[Server, Path]) -> None:
    server, db = served
    chat = client_of(server)
    pirate = [{"role": "system", "content": "Talk like a pirate."}, *EARLIER]
    answer = chat.chat.completions.create(model="assistant", messages=pirate)  # type: ignore[arg-type]
    assert answer.choices[0].message.content == "Arr, your name be Ada."
    plain = chat.chat.completions.create(model="assistant", messages=EARLIER)  # type: ignore[arg-type]
    assert plain.choices[0].message.content == "Your name is Ada."
    alone = chat.chat.completions.create(model="assistant", messages=EARLIER[-1:])  # type: ignore[arg-type]
    assert alone.choices[0].message.content == "I do not know."

    before = runs_in(db)
    with pytest.raises(openai.BadRequestError) as system:
        chat.chat.completions.create(model="reply", messages=[{"role": "system", "content": "be brief"}, *ASKED])  # type: ignore[list-item]
    assert "no `system` input" in system.value.message
    with pytest.raises(openai.BadRequestError) as history:
        chat.chat.completions.create(model="reply", messages=EARLIER)  # type: ignore[arg-type]
    assert "2 earlier turn(s)" in history.value.message and "history" in history.value.message
    assert runs_in(db) == before


def shape_of(text: str) -> ChatShape | str:
    plan = compile_flow(load_flow_text(text, file="flow.yaml"))
    return chat_shape(ServedFlow(plan.flow.spec.name, Path("flow.yaml"), "", plan))


def test_the_shape_names_the_inputs_and_requests_map_onto_them() -> None:
    shape = shape_of(ASSISTANT)
    assert shape == ChatShape("answer", "question", False, "system", "history")
    assert isinstance(shape, ChatShape)
    said = [Message(role="developer", content="Be short."), *(Message(**turn) for turn in EARLIER)]
    assert chat_inputs("assistant", shape, said) == {
        "system": "Be short.",
        "question": "What is my name?",
        "history": [
            {"role": "user", "content": "Hello, my name is Ada."},
            {"role": "assistant", "content": "Hello Ada."},
        ],
    }
    parts = Message(role="user", content=[{"type": "text", "text": "a "}, {"type": "text", "text": "b"}])
    assert chat_inputs("assistant", shape, [parts])["question"] == "a b"
    refused = [
        [Message(role="user", content=[{"type": "image_url", "image_url": {"url": "x"}}])],
        [Message(role="tool", content="42"), Message(role="user", content="q")],
        [Message(role="user", content="q"), Message(role="assistant", content="prefill")],
        [Message(role="system", content="only instructions")],
    ]
    for messages in refused:
        with pytest.raises(ChatRefused) as err:
            chat_inputs("assistant", shape, messages)
        assert err.value.status == 400


def test_a_flow_that_waits_for_a_person_or_needs_more_inputs_is_no_chat_model() -> None:
    approval = (SERVE_FLOWS / "approval.yaml").read_text(encoding="utf-8")
    assert shape_of(approval) == "flow 'approval' waits for a person at node 'approve'; a chat client cannot answer it"
    steps = (SERVE_FLOWS / "steps.yaml").read_text(encoding="utf-8")
    assert "one str output" in str(shape_of(steps))
    needs_more = ASSISTANT.replace(
        "history: {type: messages, default: []}", "history: {type: messages}\n  tone: {type: int}"
    )
    assert shape_of(needs_more) == "flow 'assistant' needs input 'tone', which a chat request cannot give"
