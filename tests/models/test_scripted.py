"""The scripted model: rules, errors that fall through, prices, the ledger."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.errors import SpecError
from studio.flow.spec import ModelSpec, ScriptRule
from studio.models.base import Message, ModelError, Request
from studio.models.scripted import LEDGER_ENV, ScriptedModel, from_spec


def _model(*rules: dict[str, object]) -> ScriptedModel:
    return ScriptedModel(
        [ScriptRule.model_validate(r) for r in rules], input_cost_per_token=0.1, output_cost_per_token=1.0
    )


async def test_first_matching_rule_answers_and_tokens_are_whitespace_words() -> None:
    model = _model({"match": "refund|charge", "reply": "billing"}, {"reply": "other"})
    done = await model.complete(Request(messages=(Message("user", "please refund me"),)))
    assert (done.text, done.input_tokens, done.output_tokens) == ("billing", 3, 1)
    assert done.cost_usd == pytest.approx(0.3 + 1.0)
    assert (await model.complete(Request(prompt="hello"))).text == "other"


@pytest.mark.parametrize("kind", ["rate_limit", "server", "auth", "timeout", "bad_json"])
async def test_errors_fail_n_times_then_fall_through(kind: str) -> None:
    model = _model({"error": {"kind": kind, "times": 2}}, {"reply": "ok"})
    for _ in range(2):
        with pytest.raises(ModelError) as caught:
            await model.complete(Request(prompt="x"))
        assert caught.value.kind == kind
    assert (await model.complete(Request(prompt="x"))).text == "ok"


async def test_no_matching_rule_is_an_error() -> None:
    with pytest.raises(ModelError, match="no rule matched"):
        await _model({"match": "x", "reply": "y"}).complete(Request(prompt="abc"))


async def test_ledger_records_every_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv(LEDGER_ENV, str(ledger))
    model = _model({"error": {"kind": "server", "times": 1}}, {"reply": "ok"})
    with pytest.raises(ModelError):
        await model.complete(Request(prompt="a"))
    await model.complete(Request(prompt="b"))
    lines = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert [(x["prompt"], x.get("error"), x.get("reply")) for x in lines] == [("a", "server", None), ("b", None, "ok")]


async def test_script_file_with_prices(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("input_cost_per_token: 2\nscript:\n  - {reply: hi}\n")
    model = from_spec(ModelSpec(model="scripted/s.yaml"), tmp_path)
    assert (await model.complete(Request(prompt="a b"))).cost_usd == 4


def test_bad_script_file_names_file_and_line(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("script:\n  - {reply: hi}\n  - {error: {kind: meteor}}\n")
    with pytest.raises(SpecError) as caught:
        from_spec(ModelSpec(model="scripted/s.yaml"), tmp_path)
    assert caught.value.line == 3 and caught.value.file == str(script)
    with pytest.raises(SpecError, match="not found"):
        from_spec(ModelSpec(model="scripted/missing.yaml"), tmp_path)


async def test_replies_are_given_in_turn_and_the_last_repeats() -> None:
    model = ScriptedModel([ScriptRule(match="judge", replies=["weak", "good"]), ScriptRule(reply="other")])
    answers = [(await model.complete(Request(prompt=p))).text for p in ("judge it", "hello", "judge it", "judge")]
    assert answers == ["weak", "other", "good", "good"]
    assert model.cacheable is False and ScriptedModel([ScriptRule(reply="x")]).cacheable is True
