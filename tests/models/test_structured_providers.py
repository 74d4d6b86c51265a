"""`llm.structured` on providers without JSON-schema decoding: a forced tool call where the model
picks tools, an assistant-turn prefill on Anthropic's protocol, the validation error sent back
either way. Recorded by a real listener (what litellm sends), then on the embedded model served
over both protocols."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from studio.runtime.runner import run_flow_async
from studio.store import SQLiteStore
from tests.models.conftest import Recorder
from tests.models.test_provider_requests import openai_reply

Start = Callable[[list[dict[str, Any]]], Recorder]

NODE = """  s:
    type: llm.structured
    inputs: {ticket: $inputs.ticket}
    config:
      prompt: "Ticket: {{ ticket }}"
      fields: {topic: {type: str}, urgent: {type: bool}}
"""


def flow(tmp_path: Path, alias: str) -> Path:
    path = tmp_path / "flow.yaml"
    path.write_text(
        "flowstudio: 1\nname: structured\ninputs:\n  ticket: {type: str, default: The app crashes on save}\n"
        f"models:\n  default: {alias}\nnodes:\n{NODE}outputs: {{data: $s.data}}\n"
    )
    return path


def anthropic_reply(text: str) -> dict[str, Any]:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 20, "output_tokens": 5},
    }
    return {"status": 200, "body": body}


def tool_call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": "call_1", "type": "function", "function": {"name": "answer", "arguments": json.dumps(arguments)}}


async def test_a_model_with_function_calling_is_asked_by_a_forced_tool_call(
    recorder: Start, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWSTUDIO_TEST_OPENAI_KEY", "sk-test-0123456789abcdef")
    replies = [
        openai_reply(None, [tool_call({"topic": 3, "urgent": True})]),
        openai_reply(None, [tool_call({"topic": "crash", "urgent": True})]),
    ]
    server = recorder(replies)
    alias = f"{{model: openai/gpt-4o-mini, api_base: '{server.url}/v1', api_key: $env.FLOWSTUDIO_TEST_OPENAI_KEY}}"
    result = await run_flow_async(flow(tmp_path, alias), {}, db=tmp_path / "r.db")
    assert result.status == "succeeded", result.error
    assert result.outputs == {"data": {"topic": "crash", "urgent": True}}
    first, second = (r["body"] for r in server.requests())
    assert first["tool_choice"] == {"type": "function", "function": {"name": "answer"}}
    assert first["tools"][0]["function"]["parameters"]["required"] == ["topic", "urgent"]
    assert "prompt" not in first and first["messages"][-1] == {
        "role": "user",
        "content": "Ticket: The app crashes on save",
    }
    assert "That reply is invalid: topic: 3 is not of type 'string'" in second["messages"][-1]["content"]


async def test_anthropic_s_protocol_continues_the_object_from_an_assistant_turn(
    recorder: Start, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWSTUDIO_TEST_ANTHROPIC_KEY", "sk-ant-test-0123456789")
    server = recorder([anthropic_reply('crash", "urgent": "yes"}'), anthropic_reply('crash", "urgent": true}')])
    alias = f"{{model: anthropic/claude-3-5-haiku-latest, api_base: '{server.url}', api_key: $env.FLOWSTUDIO_TEST_ANTHROPIC_KEY}}"
    result = await run_flow_async(flow(tmp_path, alias), {}, db=tmp_path / "r.db")
    assert result.status == "succeeded", result.error
    assert result.outputs == {"data": {"topic": "crash", "urgent": True}}
    first, second = (r["body"] for r in server.requests())
    assert first["messages"][0]["role"] == "user" and first["messages"][0]["content"][0]["text"].endswith("JSON:")
    assert first["messages"][-1] == {"role": "assistant", "content": [{"type": "text", "text": '{"topic": "'}]}
    retried = json.dumps(second["messages"])
    assert "urgent: 'yes' is not of type 'boolean'" in retried and second["messages"][-1]["role"] == "assistant"


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_structured_on_the_embedded_model_over_both_protocols(
    protocol: str, llama_server: Any, tmp_path: Path
) -> None:
    api_base = llama_server.url + ("/v1" if protocol == "openai" else "")
    path = flow(tmp_path, f"{{model: {protocol}/smollm2, api_base: '{api_base}', max_tokens: 48, retries: 0}}")
    db = tmp_path / "r.db"
    for ticket in ("The app crashes every time I press save", "I was charged twice this month"):
        result = await run_flow_async(path, {"ticket": ticket}, db=db)
        assert result.status == "succeeded", result.error
        assert result.outputs is not None and set(result.outputs["data"]) == {"topic", "urgent"}
    store = SQLiteStore(db)
    try:
        requests = [call.request for run in store.query_runs() for call in store.calls(run.run_id)]
    finally:
        store.close()
    if protocol == "anthropic":  # the completion form as a chat whose assistant turn begins the object
        assert all(r["messages"][-1] == {"role": "assistant", "content": '{"topic": "'} for r in requests)
    else:
        assert all(r["prompt"].endswith('JSON: {"topic": "') for r in requests)
