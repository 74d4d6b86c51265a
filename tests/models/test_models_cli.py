"""`flowstudio models check` and `validate`'s capability warnings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CLI

SCRIPTED = """flowstudio: 1
name: checked
models:
  default:
    model: scripted
    input_cost_per_token: 0.000002
    output_cost_per_token: 0.000008
    script: [{reply: OK}]
  other: {model: scripted, script: [{error: {kind: server}}]}
nodes:
  reply: {type: llm.generate, config: {prompt: hi}}
outputs: {text: $reply.text}
"""


def test_models_check_reports_each_alias(cli: CLI, tmp_path: Path) -> None:
    flow = tmp_path / "checked.yaml"
    flow.write_text(SCRIPTED)
    done = cli("models", "check", str(flow), "--alias", "default")
    assert done.code == 0, done.err
    assert "default: scripted  provider scripted  ok in" in done.out
    assert "$0.002 in / $0.008 out per 1,000 tokens" in done.out
    both = cli("models", "check", str(flow), "--json")
    assert both.code == 1
    report = {r["alias"]: r for r in both.json()}
    assert report["default"]["reply"] == "OK" and report["default"]["latency_s"] >= 0
    assert report["other"]["error"].startswith("server") and report["other"]["latency_s"] is None
    assert "streaming" in report["default"]["capabilities"]
    wrong = cli("models", "check", str(flow), "--alias", "nope")
    assert wrong.code == 2 and "no model alias 'nope'" in wrong.err


AGENT = """flowstudio: 1
name: agents
models:
  default: {{model: {model}, api_base: 'http://127.0.0.1:9'}}
nodes:
  agent: {{type: llm.agent, inputs: {{task: hi}}, config: {{tools: [calculator], protocol: functions}}}}
  label: {{type: llm.classify, inputs: {{text: hi}}, config: {{labels: [a, b]}}}}
outputs: {{answer: $agent.answer, label: $label.label}}
"""


@pytest.mark.parametrize(
    ("model", "warned"),
    [("anthropic/smollm2", ["agent"]), ("openai/gpt-4o-mini", []), ("scripted", ["agent", "label"])],
)
def test_validate_warns_when_a_node_needs_what_its_model_lacks(
    cli: CLI, tmp_path: Path, model: str, warned: list[Any]
) -> None:
    flow = tmp_path / "agents.yaml"
    flow.write_text(
        AGENT.format(model=model).replace(
            "api_base: 'http://127.0.0.1:9'", "script: []" if model == "scripted" else "api_base: 'http://127.0.0.1:9'"
        )
    )
    done = cli("validate", str(flow))
    assert done.code == 0, done.err
    lines = [line for line in done.err.splitlines() if line.startswith("warning:")]
    assert [line.split("node ")[1].split(" ")[0] for line in lines] == warned
    if "agent" in warned:
        assert "function calling" in done.err


def test_the_readme_provider_snippets_are_valid_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from studio.flow.spec import load_flow
    from studio.models import client_for
    from tests.conftest import ROOT

    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Models and providers", 1)[1]
    snippet = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    flow = tmp_path / "providers.yaml"
    flow.write_text(
        "flowstudio: 1\nname: snippets\n" + snippet + "nodes:\n  reply: {type: llm.generate, config: {prompt: hi}}\n"
        "outputs: {text: $reply.text}\n"
    )
    loaded = load_flow(flow)
    providers = {}
    for alias, spec in loaded.spec.models.items():
        client = client_for(spec, loaded.base_dir)
        providers[alias] = client.capabilities().provider  # type: ignore[attr-defined]
    assert providers == {
        "default": "openai",
        "claude": "anthropic",
        "azure": "azure",
        "ollama": "ollama",
        "vllm": "openai",
        "llamacpp": "openai",
        "local": "local",
        "robust": "openai",
    }
