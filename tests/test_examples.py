"""Every example flow runs: on its scripted variant always, on the embedded model when marked slow."""

from __future__ import annotations

import pytest

from studio.models.local import is_installed
from tests.conftest import CLI, FLOWS, SCRIPTS, Result

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
    "handbook-qa": (
        {"question": "How long do I have to return an item?"},
        {"answer": "30 days from delivery.", "sources": ["refunds.md"]},
        "handbook-qa",
    ),
    "calculator-agent": (
        {"question": "What is 12 times 7?"},
        {
            "answer": "84",
            "turns": [
                {
                    "turn": 1,
                    "reply": "Action: calculator\nInput: 12 * 7",
                    "tool": "calculator",
                    "input": "12 * 7",
                    "observation": "84",
                },
                {"turn": 2, "reply": "Answer: 84", "answer": "84"},
            ],
        },
        "calculator-agent",
    ),
    "summarise-reviews": (
        {"reviews": '["Great value, works perfectly.", "Broke after a week."]'},
        {
            "per_review": [{"summary": "Customer loves it."}, {"summary": "Customer is unhappy."}],
            "overall": "Opinions are split.",
        },
        "summarise-reviews",
    ),
    "draft-critique-revise": (
        {"topic": "tea"},
        {"text": "Green tea is a calming drink enjoyed worldwide.", "rounds": 2},
        "draft-critique-revise",
    ),
    "approve-reply": (
        {"message": "Where is my refund?"},
        {"draft": "We are sorry, a refund is on its way.", "sent": "SENT: We are sorry, a refund is on its way."},
        "approve-reply",
    ),
}
WAITING = {"approve-reply": "approve=true"}
"""Flows that stop for a person (exit 3) and the `--value` that lets them finish."""


def _args(inputs: dict[str, str]) -> list[str]:
    return [arg for name, value in inputs.items() for arg in ("-i", f"{name}={value}")]


def _finish(cli: CLI, name: str, result: Result) -> Result:
    """Answer the human-input node of a waiting example, as a person would."""
    if name not in WAITING:
        return result
    assert result.code == 3 and result.json()["status"] == "waiting", result.err
    return cli("resume", result.json()["run_id"], "--value", WAITING[name], "--json")


def test_every_example_flow_has_a_scripted_variant() -> None:
    assert {p.stem for p in FLOWS.glob("*.yaml")} == set(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_on_scripted_model(cli: CLI, name: str) -> None:
    inputs, outputs, script = EXAMPLES[name]
    model = f"default=scripted/{SCRIPTS / script}.yaml"
    result = _finish(cli, name, cli("run", str(FLOWS / f"{name}.yaml"), *_args(inputs), "--model", model, "--json"))
    assert result.code == 0, result.err
    assert result.json()["outputs"] == outputs


@pytest.mark.slow
@pytest.mark.skipif(not is_installed(), reason="flowstudio models install smollm2")
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_on_embedded_model(cli: CLI, name: str) -> None:
    inputs, outputs, _ = EXAMPLES[name]
    result = _finish(cli, name, cli("run", str(FLOWS / f"{name}.yaml"), *_args(inputs), "--json", timeout=600))
    assert result.code == 0, result.err
    body = result.json()
    assert body["status"] == "succeeded"
    assert set(body["outputs"]) == set(outputs)
    assert body["tokens"] > 0 and body["cost_usd"] == 0
