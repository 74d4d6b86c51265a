"""`llm.classify`'s cascade: the student's sampled labels vote (with their confidence, on a model
that scores labels), the teacher labels when too few agree or the student is unsure, and the
teacher's label is kept as a demo for the nearest later texts."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

from nodes import labelling, strategies
from nodes.labelling import Choice, Labeller, nearest_label
from studio.node import LLM, NodeContext


class Settings(labelling.Settings, Protocol):
    """The classifier's config fields the cascade reads (`llm.classify`'s Config)."""

    teacher: str
    agree: int
    recall: int
    threshold: float

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Any:
        """The config with `update` applied."""
        ...


def question(values: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """What the memory keeps a label under: the text, and the `text` input."""
    text = str(values.get("text", ""))
    return text, {"text": text}


async def cascade(c: Settings, text: str, ctx: NodeContext) -> Choice:
    """The cascade's label for `text`, with the student's confidence when the student's label stands."""
    plan = strategies.Cascade(c.teacher, c.samples, c.agree, c.recall, "label", c.threshold)
    how: dict[str, labelling.Method] = {}

    async def student(recalled: list[dict[str, Any]], llm: LLM) -> list[strategies.Vote]:
        demos = [*c.demos, *({"text": str(d.get("text", "")), "label": str(d["label"])} for d in recalled)]
        labeller = Labeller(c.model_copy(update={"demos": demos}))
        mine = replace(ctx, llm=llm)
        sampling = [
            {"temperature": strategies.SAMPLE_TEMPERATURE, "extra": {"seed": i}} if c.samples > 1 else {}
            for i in range(c.samples)
        ]
        outs = await asyncio.gather(*(labeller.choose(labeller.prompt(text), mine, **o) for o in sampling))
        how["method"] = outs[0].method
        return [strategies.Vote(o.label, o.confidence) for o in outs]

    async def teacher(llm: LLM) -> str:
        labeller = Labeller(c)
        out = await labeller.choose(labeller.prompt(text), replace(ctx, llm=llm))
        how["method"] = out.method
        return out.label

    done = await strategies.decide(plan, ctx, text, {"text": text}, student, teacher)
    sure = done.confidence if done.by == "student" else None
    return Choice(nearest_label(done.answer, c.labels), sure, how.get("method", "text"))
