"""The `strategy` of `llm.generate` and `llm.classify`: which calls each makes and how answers combine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodes.llm_classify import Classify
from nodes.llm_generate import Generate
from nodes.strategies import majority
from studio.models.base import Completion
from studio.node import NodeContext, TemplateInputs


class Replies:
    """A `ctx.llm` answering calls in turn from a list, keeping what it was asked."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.calls: list[dict[str, Any]] = []

    async def complete(self, **kwargs: Any) -> Completion:
        self.calls.append(kwargs)
        text = self.texts[min(len(self.calls), len(self.texts)) - 1]
        return Completion(text=text, input_tokens=1, output_tokens=1)


def context(llm: Replies) -> NodeContext:
    return NodeContext(run_id="r", node_id="n", flow_dir=Path("."), llm=llm)


def generate(**config: Any) -> Generate:
    return Generate(Generate.Config(prompt="Q: {{ q }}\nA:", form="completion", **config))


async def test_single_is_one_call_as_before() -> None:
    llm = Replies(" 4 ")
    out = await generate().run(TemplateInputs(q="2+2"), context(llm))
    assert out.text == "4" and len(llm.calls) == 1
    assert set(llm.calls[0]) == {"prompt", "stop", "max_tokens"}


async def test_ensemble_samples_with_distinct_seeds_and_takes_the_majority() -> None:
    llm = Replies("4", "5", "4.")
    out = await generate(strategy="ensemble", samples=3).run(TemplateInputs(q="2+2"), context(llm))
    assert out.text == "4"
    assert [c["extra"]["seed"] for c in llm.calls] == [0, 1, 2]
    assert all(c["temperature"] > 0 for c in llm.calls)


async def test_reasoning_thinks_then_answers() -> None:
    llm = Replies("2 and 2 make 4.", "4")
    out = await generate(strategy="reasoning").run(TemplateInputs(q="2+2"), context(llm))
    assert out.text == "4" and len(llm.calls) == 2
    assert llm.calls[0]["prompt"].endswith("A: Let's think step by step.")
    assert llm.calls[1]["prompt"].endswith("2 and 2 make 4.\nTherefore, the answer is:")


async def test_reflect_drafts_critiques_and_revises_in_chat() -> None:
    llm = Replies("5", "That is wrong, it is 4.", "4")
    node = Generate(Generate.Config(prompt="{{ q }}", strategy="reflect"))
    out = await node.run(TemplateInputs(q="2+2?"), context(llm))
    assert out.text == "4" and len(llm.calls) == 3
    roles = [m.role for m in llm.calls[2]["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]


@pytest.mark.parametrize(("answers", "winner"), [(["a", "b", "B", "c"], "b"), (["x", "y"], "x"), ([], "")])
def test_majority(answers: list[str], winner: str) -> None:
    assert majority(answers) == winner


async def test_classify_ensemble_without_logprobs_votes_on_labels() -> None:
    llm = Replies("bug", "billing", "bug")
    node = Classify(Classify.Config(labels=["billing", "bug"], strategy="ensemble", samples=3))
    out = await node.run(Classify.Inputs(text="it crashes"), context(llm))
    assert out.label == "bug" and len(llm.calls) == 3


async def test_classify_ensemble_with_demos_rotates_them() -> None:
    llm = Replies("bug")
    demos = [{"text": "charged twice", "label": "billing"}, {"text": "crash", "label": "bug"}]
    node = Classify(Classify.Config(labels=["billing", "bug"], demos=demos, strategy="ensemble", samples=2))
    await node.run(Classify.Inputs(text="it crashes"), context(llm))
    first, second = (c["prompt"] for c in llm.calls)
    assert first.index("charged twice") < first.index("crash\n") and second.index("crash\n") < second.index("charged")


async def test_classify_reasoning_reads_the_label_after_thinking() -> None:
    llm = Replies("It is about a crash.", "bug")
    node = Classify(Classify.Config(labels=["billing", "bug"], strategy="reasoning"))
    out = await node.run(Classify.Inputs(text="it crashes"), context(llm))
    assert out.label == "bug"
    assert llm.calls[1]["prompt"].endswith("Therefore, the label is:")
