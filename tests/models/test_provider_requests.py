"""What litellm really sends to providers, recorded by a real HTTP listener on 127.0.0.1:
nothing a provider lacks is sent (Ollama), function calls round-trip, and errors come by kind."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from studio.flow.spec import ModelSpec
from studio.models.base import Message, Request
from studio.models.litellm_client import LiteLLMModel
from studio.models.local_server import free_port
from studio.runtime.runner import run_flow_async
from studio.store import SQLiteStore
from tests.models.conftest import Recorder

Start = Callable[[list[dict[str, Any]]], Recorder]


def flow(tmp_path: Path, alias: str, nodes: str, outputs: str) -> Path:
    path = tmp_path / "flow.yaml"
    path.write_text(
        "flowstudio: 1\nname: requests\ninputs:\n  text: {type: str, default: I was charged twice}\n"
        f"models:\n  default: {alias}\nnodes:\n{nodes}\noutputs: {outputs}\n"
    )
    return path


def calls(db: Path, run_id: str) -> list[Any]:
    store = SQLiteStore(db)
    try:
        return list(store.calls(run_id))
    finally:
        store.close()


def ollama_reply(text: str) -> dict[str, Any]:
    body = {"model": "llama3", "created_at": "2026-01-01T00:00:00Z", "response": text, "done": True}
    return {"status": 200, "body": {**body, "prompt_eval_count": 12, "eval_count": 3}}


def openai_reply(content: str | None, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    }
    return {"status": 200, "body": body}


NODES = """  classify:
    type: llm.classify
    inputs: {text: $inputs.text}
    config: {labels: [billing, bug, other]}
  agent:
    type: llm.agent
    inputs: {task: $inputs.text}
    config: {tools: [calculator], max_turns: 1, on_limit: stop}
"""


async def test_ollama_gets_no_parameter_it_lacks(recorder: Start, tmp_path: Path) -> None:
    server = recorder([ollama_reply('{"label": "billing"}')])
    alias = f"{{model: ollama/llama3, api_base: '{server.url}', retries: 0}}"
    path = flow(tmp_path, alias, NODES, "{label: $classify.label, method: $classify.method}")
    result = await run_flow_async(path, {}, db=tmp_path / "r.db")
    assert result.status == "succeeded", result.error
    assert result.outputs == {"label": "billing", "method": "constrained"}
    sent = server.requests()
    assert len(sent) == 2 and all(r["path"].startswith("/api/") for r in sent)
    for request in sent:
        text = json.dumps(request["body"])
        assert "logprobs" not in text and "top_logprobs" not in text and '"tools"' not in text
    classify = next(r["body"] for r in sent if "format" in r["body"])
    assert classify["format"]["properties"]["label"]["enum"] == ["billing", "bug", "other"]


async def test_function_calls_round_trip(recorder: Start, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWSTUDIO_TEST_OPENAI_KEY", "sk-test-0123456789abcdef")
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "calculator", "arguments": '{"expression": "12*7"}'},
    }
    server = recorder([openai_reply(None, [call]), openai_reply("It is 84.")])
    alias = f"{{model: openai/gpt-4o-mini, api_base: '{server.url}/v1', api_key: $env.FLOWSTUDIO_TEST_OPENAI_KEY}}"
    agent = "  agent:" + NODES.split("  agent:")[1].replace("max_turns: 1", "max_turns: 3")
    path = flow(tmp_path, alias, agent, "{answer: $agent.answer, turns: $agent.turns}")
    result = await run_flow_async(path, {}, db=tmp_path / "r.db")
    assert result.status == "succeeded", result.error
    assert result.outputs is not None and result.outputs["answer"] == "It is 84."
    assert result.outputs["turns"][0]["tool"] == "calculator" and result.outputs["turns"][0]["observation"] == "84"
    first, second = (r["body"] for r in server.requests())
    assert first["tools"][0]["function"]["name"] == "calculator"
    assert "returned: 84" in json.dumps(second["messages"])
    headers = [{k.lower(): v for k, v in r["headers"].items()} for r in server.requests()]
    assert all(h["authorization"] == "Bearer sk-test-0123456789abcdef" for h in headers)


GENERATE = "  reply: {type: llm.generate, inputs: {text: $inputs.text}, config: {prompt: '{{ text }}'}}\n"


async def test_429_waits_for_retry_after(recorder: Start, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWSTUDIO_TEST_OPENAI_KEY", "sk-test-0123456789abcdef")
    limited = {"status": 429, "headers": {"retry-after": "1"}, "body": {"error": {"message": "slow down"}}}
    server = recorder([limited, openai_reply("fine")])
    alias = (
        f"{{model: openai/gpt-4o-mini, api_base: '{server.url}/v1', api_key: $env.FLOWSTUDIO_TEST_OPENAI_KEY, "
        "retries: 2, retry_backoff_s: 0}"
    )
    db = tmp_path / "r.db"
    started = time.perf_counter()
    result = await run_flow_async(flow(tmp_path, alias, GENERATE, "{text: $reply.text}"), {}, db=db)
    assert result.status == "succeeded", result.error
    assert time.perf_counter() - started >= 1.0  # backoff 0, so only Retry-After made it wait
    records = calls(db, result.run_id)
    assert [r.error is not None for r in records] == [True, False]
    assert records[0].error.startswith("rate_limit") and "slow down" in records[0].error
    assert len(server.requests()) == 2


async def test_rejected_key_is_auth_not_retried_and_masked(
    recorder: Start, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-test-0123456789abcdef"
    monkeypatch.setenv("FLOWSTUDIO_TEST_OPENAI_KEY", key)
    rejected = {"status": 401, "body": {"error": {"message": f"Incorrect API key provided: {key}"}}}
    server = recorder([rejected])
    alias = f"{{model: openai/gpt-4o-mini, api_base: '{server.url}/v1', api_key: $env.FLOWSTUDIO_TEST_OPENAI_KEY, retries: 3}}"
    db = tmp_path / "r.db"
    result = await run_flow_async(flow(tmp_path, alias, GENERATE, "{text: $reply.text}"), {}, db=db)
    assert result.status == "failed" and result.error
    assert "auth" in result.error and "FLOWSTUDIO_TEST_OPENAI_KEY" in result.error
    assert key not in result.error and key[5:] not in result.error
    assert len(server.requests()) == 1 and len(calls(db, result.run_id)) == 1
    assert all(key not in (r.error or "") for r in calls(db, result.run_id))


async def test_missing_key_names_the_variable_before_any_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    db = tmp_path / "r.db"
    alias = "{model: openai/gpt-4o-mini, retries: 3}"
    result = await run_flow_async(flow(tmp_path, alias, GENERATE, "{text: $reply.text}"), {}, db=db)
    assert result.status == "failed" and result.error
    assert "auth" in result.error and "OPENAI_API_KEY" in result.error
    assert len(calls(db, result.run_id)) == 1


async def test_unreachable_host_is_named(tmp_path: Path) -> None:
    port = free_port()
    alias = f"{{model: openai/smollm2, api_base: 'http://127.0.0.1:{port}/v1', retries: 0}}"
    result = await run_flow_async(flow(tmp_path, alias, GENERATE, "{text: $reply.text}"), {}, db=tmp_path / "r.db")
    assert result.status == "failed" and result.error
    assert f"cannot reach http://127.0.0.1:{port}/v1" in result.error


def test_parameters_a_provider_lacks_are_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    model = LiteLLMModel(ModelSpec(model="anthropic/claude-3-5-haiku-latest"))
    request = Request(messages=(Message("user", "hi"),), extra={"top_logprobs": 5, "seed": 1})
    arguments = model._arguments(request)
    assert "logprobs" not in arguments and "top_logprobs" not in arguments and "seed" not in arguments
    assert arguments["temperature"] == 0.0 and arguments["max_tokens"] == 256
    assert {"logprobs", "seed"} <= model.dropped
    openai = LiteLLMModel(ModelSpec(model="openai/gpt-4o-mini", api_base="http://127.0.0.1:1/v1"))
    assert openai._arguments(request)["top_logprobs"] == 5
    assert openai.capabilities().logprobs and openai.supports_tools()
    assert not model.capabilities().logprobs and model.capabilities().constrained


async def test_azure_deployment_is_called_at_its_address(
    recorder: Start, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWSTUDIO_TEST_AZURE_KEY", "azure-test-key-0123456789")
    server = recorder([openai_reply("hello from azure")])
    alias = (
        f"{{model: azure/my-gpt4o, api_base: '{server.url}', api_key: $env.FLOWSTUDIO_TEST_AZURE_KEY, "
        "params: {api_version: '2024-10-21'}}"
    )
    result = await run_flow_async(flow(tmp_path, alias, GENERATE, "{text: $reply.text}"), {}, db=tmp_path / "r.db")
    assert result.status == "succeeded", result.error
    assert result.outputs == {"text": "hello from azure"}
    (request,) = server.requests()
    assert request["path"] == "/openai/deployments/my-gpt4o/chat/completions?api-version=2024-10-21"
    assert {k.lower(): v for k, v in request["headers"].items()}["api-key"] == "azure-test-key-0123456789"


async def test_openai_context_overflow_names_the_counts(
    recorder: Start, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWSTUDIO_TEST_OPENAI_KEY", "sk-test-0123456789abcdef")
    message = "This model's maximum context length is 128000 tokens. However, your messages resulted in 130001 tokens."
    error = {"message": message, "type": "invalid_request_error", "code": "context_length_exceeded"}
    server = recorder([{"status": 400, "body": {"error": error}}])
    alias = f"{{model: openai/gpt-4o-mini, api_base: '{server.url}/v1', api_key: $env.FLOWSTUDIO_TEST_OPENAI_KEY}}"
    db = tmp_path / "r.db"
    result = await run_flow_async(
        flow(tmp_path, alias, GENERATE, "{text: $reply.text}"), {"text": "one two three"}, db=db
    )
    assert result.status == "failed" and result.error
    assert "context overflow" in result.error and "a context window of 128000 tokens" in result.error
    assert "the prompt has " in result.error and "plus up to 256 for the reply" in result.error
    assert len(server.requests()) == 1  # never retried
