"""Tests of the embedded `local/smollm2` provider."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from studio.models import local
from studio.models.base import Completion, Message, ModelError, Request

ROOT = Path(__file__).resolve().parents[2]
needs_model = pytest.mark.skipif(not local.is_installed(), reason="local/smollm2 is not installed")

FEW_SHOT = (
    "Text: I was charged twice\nLabel: billing\n\n"
    "Text: The app crashes\nLabel: bug\n\n"
    "Text: Please refund my last invoice\nLabel:"
)


def _chat(content: str, max_tokens: int = 24) -> Request:
    return Request(messages=(Message("user", content),), max_tokens=max_tokens)


def _assert_answered(result: Completion) -> None:
    assert result.text.strip()
    assert result.input_tokens > 0
    assert result.output_tokens > 0
    assert result.cost_usd == 0.0


def test_import_is_cheap() -> None:
    code = "import sys, studio.models.local; assert 'xllamacpp' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    assert local.LocalModel().name == "local/smollm2"


async def test_missing_model_names_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "_server", None)
    monkeypatch.setattr(local, "model_path", lambda: None)
    assert not local.is_installed()
    with pytest.raises(ModelError) as info:
        await local.LocalModel().complete(_chat("hi"))
    assert info.value.kind == "missing_model"
    assert "flowstudio models install smollm2" in str(info.value)


async def test_missing_runtime_names_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "_server", None)
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    with pytest.raises(ModelError) as info:
        await local.LocalModel().complete(_chat("hi"))
    assert info.value.kind == "missing_model"
    assert "flowstudio[local]" in str(info.value)
    assert "flowstudio models install smollm2" in str(info.value)


async def test_empty_request_is_rejected() -> None:
    with pytest.raises(ModelError) as info:
        await local.LocalModel().complete(Request())
    assert info.value.kind == "bad_request"


@pytest.mark.slow
@needs_model
async def test_chat_call() -> None:
    result = await local.LocalModel().complete(_chat("What is the capital of France?"))
    _assert_answered(result)
    assert result.finish_reason in {"stop", "length"}


@pytest.mark.slow
@needs_model
async def test_completion_with_stop_sequence() -> None:
    request = Request(prompt=FEW_SHOT, max_tokens=8, stop=("\n",))
    result = await local.LocalModel().complete(request)
    _assert_answered(result)
    assert "\n" not in result.text
    assert result.finish_reason == "stop"


@pytest.mark.slow
@needs_model
async def test_temperature_zero_is_deterministic() -> None:
    model = local.LocalModel()
    request = Request(
        messages=(Message("system", "You are terse."), Message("user", "Name a color.")),
        temperature=0.0,
        max_tokens=16,
    )
    first = await model.complete(request)
    second = await model.complete(request)
    assert first == second


@pytest.mark.slow
@needs_model
async def test_calls_share_one_loaded_model() -> None:
    await local.LocalModel().complete(_chat("Hello", max_tokens=4))
    server = local._server
    await local.LocalModel().complete(Request(prompt="One, two,", max_tokens=4))
    assert local._server is server
    assert local.load_count == 1


@pytest.mark.slow
@needs_model
async def test_concurrent_calls() -> None:
    model = local.LocalModel()
    requests = [_chat(f"Say the number {n}.", max_tokens=12) for n in range(3)]
    requests.append(Request(prompt=FEW_SHOT, max_tokens=8, stop=("\n",)))
    results = await asyncio.gather(*(model.complete(r) for r in requests))
    assert len(results) == 4
    for result in results:
        _assert_answered(result)


@pytest.mark.slow
@needs_model
async def test_context_overflow_is_a_bad_request() -> None:
    with pytest.raises(ModelError) as info:
        await local.LocalModel().complete(Request(prompt="hello " * 3000, max_tokens=4))
    assert info.value.kind == "bad_request"
