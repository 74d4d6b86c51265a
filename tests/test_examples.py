"""Every example flow runs: on its scripted variant always, on the embedded model when marked slow."""

from __future__ import annotations

import pytest

from studio.models.local import is_installed
from tests.conftest import CLI, FLOWS, SCRIPTS

EXAMPLES = {
    "ticket-triage": (
        {"ticket": "I was charged twice, please refund me"},
        {"category": "billing", "reply": "Sorry about that, we will refund you today."},
        "triage",
    ),
    "route-question": ({"question": "What is 6 times 2?"}, {"route": "math", "answer": "12"}, "route-question"),
    "headline": (
        {"article": "The town council voted to build a library."},
        {"summary": "The council will build a new library.", "headline": "Council Approves New Library"},
        "headline",
    ),
}


def _args(inputs: dict[str, str]) -> list[str]:
    return [arg for name, value in inputs.items() for arg in ("-i", f"{name}={value}")]


def test_every_example_flow_has_a_scripted_variant() -> None:
    assert {p.stem for p in FLOWS.glob("*.yaml")} == set(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_on_scripted_model(cli: CLI, name: str) -> None:
    inputs, outputs, script = EXAMPLES[name]
    model = f"default=scripted/{SCRIPTS / script}.yaml"
    result = cli("run", str(FLOWS / f"{name}.yaml"), *_args(inputs), "--model", model, "--json")
    assert result.code == 0, result.err
    assert result.json()["outputs"] == outputs


@pytest.mark.slow
@pytest.mark.skipif(not is_installed(), reason="flowstudio models install smollm2")
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_on_embedded_model(cli: CLI, name: str) -> None:
    inputs, outputs, _ = EXAMPLES[name]
    result = cli("run", str(FLOWS / f"{name}.yaml"), *_args(inputs), "--json")
    assert result.code == 0, result.err
    body = result.json()
    assert body["status"] == "succeeded"
    assert set(body["outputs"]) == set(outputs)
    assert body["tokens"] > 0 and body["cost_usd"] == 0
