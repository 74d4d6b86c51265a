"""Every LLM node type on real providers: llama.cpp's server (the embedded SmolLM2) spoken to
as OpenAI (`openai/...` + api_base) and as Anthropic (`anthropic/...` + api_base), streaming,
the cache replay, and errors by kind. The server is started once per session (conftest)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from studio.runtime.engine import RunOptions, RunResult
from studio.runtime.runner import run_flow_async
from studio.store import SQLiteStore

pytestmark = pytest.mark.slow

LABELS = ["billing", "bug", "other"]

NODES = """
nodes:
  single: {type: llm.generate, inputs: {ticket: $inputs.ticket}, config: {prompt: "Reply in one short sentence: {{ ticket }}"}}
  reasoning:
    type: llm.generate
    inputs: {ticket: $inputs.ticket}
    config: {prompt: "Which team handles this? {{ ticket }}", strategy: reasoning}
  ensemble:
    type: llm.generate
    inputs: {ticket: $inputs.ticket}
    config: {prompt: "One word for this: {{ ticket }}", strategy: ensemble, samples: 2, max_tokens: 8}
  reflect:
    type: llm.generate
    inputs: {ticket: $inputs.ticket}
    config: {prompt: "Title for: {{ ticket }}", strategy: reflect, max_tokens: 12}
  classify:
    type: llm.classify
    inputs: {text: $inputs.ticket}
    config: {labels: [billing, bug, other], instructions: Classify the support ticket.}
  structured:
    type: llm.structured
    inputs: {ticket: $inputs.ticket}
    config:
      prompt: "Ticket: {{ ticket }}"
      fields: {topic: {type: str}, urgent: {type: bool}}
      form: chat
      demos:
        - {ticket: The app crashes on start, data: {topic: crash, urgent: true}}
        - {ticket: How do I change my avatar, data: {topic: avatar, urgent: false}}
      retries: 1
      max_tokens: 32
  agent_text:
    type: llm.agent
    inputs: {task: $inputs.question}
    config: {tools: [calculator], protocol: text, max_turns: 2, on_limit: stop, max_tokens: 24}
  agent_functions:
    type: llm.agent
    inputs: {task: $inputs.question}
    config: {tools: [calculator], protocol: functions, max_turns: 2, on_limit: stop, max_tokens: 24}
outputs:
  single: $single.text
  label: $classify.label
  method: $classify.method
  confidence: $classify.confidence
  data: $structured.data
"""


def flow_file(tmp_path: Path, model: str, api_base: str, body: str = NODES, retries: int = 0) -> Path:
    path = tmp_path / f"{model.replace('/', '-')}.yaml"
    header = (
        "flowstudio: 1\nname: providers\n"
        "inputs:\n  ticket: {type: str, default: I was charged twice this month}\n"
        "  question: {type: str, default: 'What is 12 times 7?'}\n"
        f"models:\n  default: {{model: {model}, api_base: '{api_base}', max_tokens: 24, retries: {retries}}}\n"
    )
    path.write_text(header + body)
    return path


def steps_by_node(db: Path, run_id: str) -> dict[str, Any]:
    store = SQLiteStore(db)
    try:
        return {step.node: step for step in store.steps(run_id)}
    finally:
        store.close()


def calls_of(db: Path, run_id: str) -> list[Any]:
    store = SQLiteStore(db)
    try:
        return list(store.calls(run_id))
    finally:
        store.close()


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_every_llm_node_type_on_a_real_server(protocol: str, llama_server: Any, tmp_path: Path) -> None:
    api_base = llama_server.url + ("/v1" if protocol == "openai" else "")
    flow = flow_file(tmp_path, f"{protocol}/smollm2", api_base)
    db = tmp_path / "runs.db"
    result = await run_flow_async(flow, {}, db=db)
    assert result.status == "succeeded", result.error
    assert result.outputs is not None
    assert result.outputs["single"]
    assert result.outputs["label"] in LABELS
    assert set(result.outputs["data"]) == {"topic", "urgent"}
    steps = steps_by_node(db, result.run_id)
    assert {s.status for s in steps.values()} == {"succeeded"}
    calls = calls_of(db, result.run_id)
    assert {c.model for c in calls} == {f"{protocol}/smollm2"}
    assert all(c.error is None and c.output_tokens > 0 for c in calls)
    per_node = {node: sum(1 for c in calls if c.node == node) for node in steps}
    assert per_node["reasoning"] == 2 and per_node["ensemble"] == 2 and per_node["reflect"] == 3
    # Capabilities come from litellm: OpenAI servers give logprobs, Anthropic's API has none and
    # is asked for an answer constrained to the labels instead.
    if protocol == "openai":
        assert result.outputs["method"] == "logprobs" and result.outputs["confidence"] is not None
    else:
        assert result.outputs["method"] == "constrained" and result.outputs["confidence"] is None
        assert all("logprobs" not in json.dumps(c.request) for c in calls if c.node == "classify")
    offered = [c for c in calls if c.node == "agent_functions"]
    assert offered and all(c.request["extra"]["tools"][0]["function"]["name"] == "calculator" for c in offered)
    assert steps["agent_text"].outputs["turns"]


def test_the_embedded_server_reports_context_overflow_in_tokens(llama_server: Any, tmp_path: Path) -> None:
    body = """
nodes:
  long: {type: llm.generate, inputs: {ticket: $inputs.ticket}, config: {prompt: "{{ ticket }}"}}
outputs: {text: $long.text}
"""
    flow = flow_file(tmp_path, "openai/smollm2", llama_server.url + "/v1", body, retries=2)
    import asyncio

    result: RunResult = asyncio.run(
        run_flow_async(flow, {"ticket": "word " * 6000}, db=tmp_path / "r.db", options=RunOptions(cache=False))
    )
    assert result.status == "failed"
    assert result.error and "context overflow" in result.error
    assert "4096 tokens" in result.error and "prompt has 60" in result.error
    assert len(calls_of(tmp_path / "r.db", result.run_id)) == 1  # not retried


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_streaming_tokens_arrive_in_pieces_and_the_cache_replays_one(
    protocol: str, llama_server: Any, tmp_path: Path
) -> None:
    body = """
nodes:
  reply: {type: llm.generate, inputs: {ticket: $inputs.ticket}, config: {prompt: "Answer briefly: {{ ticket }}"}}
outputs: {text: $reply.text}
"""
    api_base = llama_server.url + ("/v1" if protocol == "openai" else "")
    flow = flow_file(tmp_path, f"{protocol}/smollm2", api_base, body)
    events: list[dict[str, Any]] = []

    def hook(event: str, **details: Any) -> None:
        if event == "token":
            events.append(details)

    db = tmp_path / "s.db"
    first = await run_flow_async(flow, {}, db=db, hooks=[hook], options=RunOptions(stream=True))
    assert first.status == "succeeded", first.error
    assert len(events) > 3
    assert {e["node"] for e in events} == {"reply"} and {e["run_id"] for e in events} == {first.run_id}
    assert "".join(e["text"] for e in events).strip() == first.outputs["text"]  # type: ignore[index]
    calls = calls_of(db, first.run_id)
    assert calls[0].output_tokens > 0 and calls[0].input_tokens > 0
    events.clear()
    again = await run_flow_async(flow, {}, db=db, hooks=[hook], options=RunOptions(stream=True))
    assert [e["text"].strip() for e in events] == [again.outputs["text"]]  # type: ignore[index]
    assert calls_of(db, again.run_id)[0].cache_hit


def test_models_check_against_the_real_server(llama_server: Any, cli: Any, tmp_path: Path) -> None:
    body = "nodes:\n  reply: {type: llm.generate, config: {prompt: hi}}\noutputs: {text: $reply.text}\n"
    flow = flow_file(tmp_path, "openai/smollm2", llama_server.url + "/v1", body)
    done = cli("models", "check", str(flow), "--json")
    assert done.code == 0, done.err
    (report,) = done.json()
    assert report["provider"] == "openai" and report["error"] is None
    assert report["latency_s"] > 0 and report["reply"]
    assert "logprobs" in report["capabilities"] and "function-calling" not in report["capabilities"]
    assert report["input_per_1k"] is None  # a self-hosted model is not in litellm's price map
