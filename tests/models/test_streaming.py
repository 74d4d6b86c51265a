"""Streaming: token events from the engine (scripted word by word, the embedded model piece by
piece), the cache replaying one chunk, plain runs not streaming, and `run --stream`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from studio.models.base import Message, Request
from studio.models.local import LocalModel, is_installed
from studio.runtime.engine import RunOptions
from studio.runtime.runner import run_flow_async
from tests.conftest import CLI

FLOW = """flowstudio: 1
name: streaming
inputs:
  topic: {type: str, default: tea}
models:
  default:
    model: scripted
    script:
      - {match: classify, reply: billing}
      - {reply: "Green tea is  calm.\\nBlack tea is bold."}
nodes:
  write: {type: llm.generate, inputs: {topic: $inputs.topic}, config: {prompt: "Write about {{ topic }}"}}
  label: {type: llm.classify, inputs: {text: $write.text}, config: {labels: [billing, bug], instructions: classify}}
outputs: {text: $write.text, label: $label.label, method: $label.method}
"""


class Tokens:
    """A hook that keeps token events."""

    def __init__(self, wants: bool = False) -> None:
        self.events: list[dict[str, Any]] = []
        if wants:
            self.wants_tokens = True

    def __call__(self, event: str, **details: Any) -> None:
        if event == "token":
            self.events.append(details)

    def text(self, node: str) -> list[str]:
        return [e["text"] for e in self.events if e["node"] == node]


@pytest.fixture
def flow(tmp_path: Path) -> Path:
    path = tmp_path / "streaming.yaml"
    path.write_text(FLOW)
    return path


async def test_scripted_replies_stream_word_by_word_and_the_cache_replays_one_chunk(flow: Path, tmp_path: Path) -> None:
    hook = Tokens()
    db = tmp_path / "r.db"
    first = await run_flow_async(flow, {}, db=db, hooks=[hook], options=RunOptions(stream=True))
    assert first.status == "succeeded" and first.outputs is not None
    assert hook.text("write") == ["Green ", "tea ", "is  ", "calm.\n", "Black ", "tea ", "is ", "bold."]
    assert hook.text("label") == ["billing"]
    assert {e["run_id"] for e in hook.events} == {first.run_id}
    assert first.outputs["method"] == "text"  # the scripted model has neither logprobs nor constraints
    hook.events.clear()
    await run_flow_async(flow, {}, db=db, hooks=[hook], options=RunOptions(stream=True))
    assert hook.text("write") == ["Green tea is  calm.\nBlack tea is bold."]


async def test_a_scripted_rule_can_stream_its_words_slowly(flow: Path, tmp_path: Path) -> None:
    import itertools
    import time

    slow = flow.read_text().replace("- {reply: ", "- {word_delay_s: 0.1, reply: ")
    flow.write_text(slow)
    seen: list[tuple[str, float]] = []

    def hook(event: str, **details: Any) -> None:
        if event == "token" and details["node"] == "write":
            seen.append((details["text"], time.perf_counter()))

    result = await run_flow_async(flow, {}, db=tmp_path / "r.db", hooks=[hook], options=RunOptions(stream=True))
    assert result.status == "succeeded"
    assert "".join(t for t, _ in seen) == "Green tea is  calm.\nBlack tea is bold."
    gaps = [b - a for (_, a), (_, b) in itertools.pairwise(seen)]
    assert len(gaps) == 7 and min(gaps) >= 0.09  # each word 0.1 s after the one before


async def test_plain_runs_do_not_stream_but_a_hook_can_ask_for_tokens(flow: Path, tmp_path: Path) -> None:
    plain = Tokens()
    await run_flow_async(flow, {}, db=tmp_path / "a.db", hooks=[plain])
    assert plain.events == []
    wanting = Tokens(wants=True)
    await run_flow_async(flow, {}, db=tmp_path / "b.db", hooks=[wanting])
    assert len(wanting.text("write")) == 8


def test_run_stream_prints_tokens_to_stderr_and_keeps_json_parseable(cli: CLI, flow: Path) -> None:
    done = cli("run", str(flow), "--stream", "--json")
    assert done.code == 0, done.err
    assert done.json()["outputs"]["text"] == "Green tea is  calm.\nBlack tea is bold."
    assert "[write] Green tea is  calm.\nBlack tea is bold.\n" in done.err
    assert "[label] billing\n" in done.err
    quiet = cli("run", str(flow), "--json")
    assert "[write]" not in quiet.err


@pytest.mark.slow
@pytest.mark.skipif(not is_installed(), reason="the embedded model is not installed")
async def test_the_embedded_model_streams_pieces_that_join_to_the_reply() -> None:
    pieces: list[str] = []
    request = Request(messages=(Message("user", "Count to five."),), max_tokens=12)
    completion = await LocalModel().stream(request, pieces.append)
    assert len(pieces) > 3 and "".join(pieces) == completion.text
    assert completion.output_tokens == 12 and completion.input_tokens > 0
