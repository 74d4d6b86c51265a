"""`llm.structured`'s cascade: the student's sampled objects vote, the teacher answers when too few
are the same object, and the teacher's object is kept as a demo for the nearest later inputs.

Two objects are the same vote when they hold the same words and numbers (`strategies.normalised`
of their JSON); a sample that never validates counts among the samples but never agrees.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

from nodes import strategies
from nodes.json_repair import Settings, ask_object
from studio.node import LLM, Completion, NodeContext, OutputError, render


class Config(Settings, Protocol):
    """The node's config fields the cascade reads (`llm.structured`'s Config)."""

    teacher: str
    samples: int
    agree: int
    recall: int

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Any:
        """The config with `update` applied."""
        ...


OUTPUT = "data"


def question(prompt: str, values: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """What the memory keeps an object under: the rendered prompt, and the input values a demo holds."""
    return render(prompt, values), strategies.demo_values(values)


async def cascade(config: Config, schema: dict[str, Any], values: dict[str, Any], ctx: NodeContext) -> Any:
    """The student's object when enough samples agree, else the teacher's (kept in the memory)."""
    c = config
    plan = strategies.Cascade(c.teacher, c.samples, c.agree, c.recall, OUTPUT)
    query, inputs = question(c.prompt, values)

    async def student(recalled: list[dict[str, Any]], llm: LLM) -> list[strategies.Vote]:
        taught = c.model_copy(update={"demos": [*c.demos, *map(_demo, recalled)]})
        seeds = range(c.samples) if c.samples > 1 else [None]
        return list(
            await asyncio.gather(*(_sample(taught, schema, values, replace(ctx, llm=Sampled(llm, s))) for s in seeds))
        )

    async def teacher(llm: LLM) -> str:
        return _text(await ask_object(c, schema, values, replace(ctx, llm=llm)))

    done = await strategies.decide(plan, ctx, query, inputs, student, teacher)
    return json.loads(done.answer)


async def _sample(
    config: Settings, schema: dict[str, Any], values: dict[str, Any], ctx: NodeContext
) -> strategies.Vote:
    try:
        return strategies.Vote(_text(await ask_object(config, schema, values, ctx)))
    except OutputError as err:
        return strategies.Vote(str(err), valid=False)


def _text(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False)


def _demo(recalled: dict[str, Any]) -> dict[str, Any]:
    """A kept teacher example as a demo: its inputs and its object under `data`."""
    answer = recalled.get(OUTPUT)
    try:
        data = json.loads(answer) if isinstance(answer, str) else answer
    except json.JSONDecodeError:
        data = answer
    return {**recalled, OUTPUT: data}


class Sampled:
    """A model whose calls are sampled (a temperature and a seed of their own), so that neither the
    model nor the cache repeats one; `seed` None: calls go as they are."""

    def __init__(self, llm: LLM, seed: int | None) -> None:
        self.llm = llm
        self.seed = seed

    async def complete(self, **request: Any) -> Completion:
        """One call, sampled."""
        if self.seed is None:
            return await self.llm.complete(**request)
        extra = {**(request.pop("extra", None) or {}), "seed": self.seed}
        request.setdefault("temperature", strategies.SAMPLE_TEMPERATURE)
        return await self.llm.complete(**request, extra=extra)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.llm, name)
