"""Built-in providers are reachable through litellm by name; real providers go through litellm."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from studio.flow.spec import ModelSpec
from studio.models.base import Message, ModelError, Request
from studio.models.litellm_client import LiteLLMModel, resolve_secret
from tests.conftest import ROOT


def test_scripted_provider_through_litellm(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("script:\n  - {reply: from the script}\n")
    code = (
        "from studio.models.litellm_bridge import register; register()\n"
        "import litellm\n"
        f"r = litellm.completion(model='scripted/{script}', messages=[{{'role': 'user', 'content': 'a b c'}}])\n"
        "print(r.choices[0].message.content, r.usage.prompt_tokens, r.usage.completion_tokens)\n"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert out.stdout.strip() == "from the script 3 3", out.stderr[-2000:]


def test_secret_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWSTUDIO_TEST_KEY", "s3cret")
    assert resolve_secret("$env.FLOWSTUDIO_TEST_KEY") == "s3cret"
    monkeypatch.delenv("FLOWSTUDIO_TEST_KEY")
    with pytest.raises(ModelError) as caught:
        resolve_secret("$env.FLOWSTUDIO_TEST_KEY")
    assert caught.value.kind == "auth" and "s3cret" not in str(caught.value)


async def test_unreachable_provider_is_a_typed_model_error() -> None:
    spec = ModelSpec(model="openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1", api_key="$env.FLOWSTUDIO_FAKE_KEY")
    os.environ["FLOWSTUDIO_FAKE_KEY"] = "not-a-real-key"
    try:
        model = LiteLLMModel(spec)
        request = Request(messages=(Message("user", "hi"),), max_tokens=5, extra={"num_retries": 0, "timeout": 5})
        with pytest.raises(ModelError) as caught:
            await model.complete(request)
        assert caught.value.kind in {"server", "timeout"}
    finally:
        del os.environ["FLOWSTUDIO_FAKE_KEY"]
