"""How an LLM node spends its calls: `single`, `reasoning`, `ensemble`, `reflect` or `cascade`.

A strategy never changes the node's prompt, only which calls are made and how their
answers combine: `reasoning` asks the model to think first and then answer (zero-shot
chain of thought, two calls), `ensemble` samples several answers and keeps the most common
one (self-consistency), `reflect` drafts an answer, asks for a critique of it and then for
a revised answer (three calls), `cascade` samples a cheap student model (the node's own) given
the teacher's past answers to the nearest questions as demos and asks the teacher alias only when
the samples disagree, keeping the teacher's answer in the node's memory. Every call goes through `ctx.llm`, so each one is traced,
cached and budgeted like any other.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from studio.node import LLM, CascadeOutcome, Completion, Message, NodeContext, TeacherExample

Strategy = Literal["single", "reasoning", "ensemble", "reflect", "cascade"]
SAMPLE_TEMPERATURE = 0.7
"""Temperature of an ensemble's samples: enough for them to differ."""
THINKING_TOKENS = 64
"""Cap on the tokens of a reasoning or critique step."""
THINK = "Let's think step by step."
REVIEW_CHAT = "Check the answer above. Say briefly what is wrong with it, or that it is correct."
REVIEW_CUE = "Review:"
CALLS = {"single": 1, "reasoning": 2, "reflect": 3}
"""Model calls per run of each strategy but `ensemble` (one per sample)."""


def calls(strategy: str, samples: int) -> float:
    """Model calls one run of a node with this strategy makes."""
    return samples if strategy in ("ensemble", "cascade") else CALLS.get(strategy, 1)


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt: chat messages, or one completion-style `text` the model continues."""

    messages: tuple[Message, ...] = ()
    text: str | None = None

    def request(self) -> dict[str, Any]:
        """Keyword arguments for `ctx.llm.complete`."""
        if self.text is not None:
            return {"prompt": self.text}
        return {"messages": list(self.messages)}

    def with_note(self, note: str) -> Prompt:
        """The same question with `note` added at its end."""
        if self.text is not None:
            return Prompt(text=f"{self.text} {note}")
        last = self.messages[-1]
        return Prompt(messages=(*self.messages[:-1], Message(last.role, f"{last.content}\n\n{note}")))

    def then(self, reply: str, chat_request: str, cue: str) -> Prompt:
        """The exchange continued: the model's `reply`, then a request (chat) or a cue (completion)."""
        if self.text is not None:
            return Prompt(text=f"{self.text} {reply.strip()}\n{cue}")
        return Prompt(messages=(*self.messages, Message("assistant", reply.strip()), Message("user", chat_request)))


Ask = Callable[..., Awaitable[str]]
"""`ask(prompt, *, stop=..., max_tokens=..., temperature=..., extra=...)` → the reply text."""


async def deliberate(strategy: Strategy, prompt: Prompt, ask: Ask, final_request: str, final_cue: str) -> Prompt:
    """The prompt whose reply is the answer: `prompt` itself, or one extended by thinking or a critique."""
    if strategy == "reasoning":
        thinking = prompt.with_note(THINK)
        reasoning = await ask(thinking, stop=["\n\n"], max_tokens=THINKING_TOKENS)
        return thinking.then(reasoning, final_request, final_cue)
    if strategy == "reflect":
        draft = await ask(prompt)
        review = prompt.then(draft, REVIEW_CHAT, REVIEW_CUE)
        critique = await ask(review, stop=["\n\n"], max_tokens=THINKING_TOKENS)
        return review.then(critique, final_request, final_cue)
    return prompt


async def samples(prompt: Prompt, ask: Ask, n: int) -> list[str]:
    """`n` sampled answers, each with its own seed so that neither the model nor the cache repeats one."""
    calls = [ask(prompt, temperature=SAMPLE_TEMPERATURE, extra={"seed": i}) for i in range(n)]
    return list(await asyncio.gather(*calls))


def normalised(answer: str) -> str:
    """What two answers must share to count as the same vote: words, case and spacing ignored."""
    return " ".join(re.findall(r"\w+", answer.lower()))


def majority(answers: list[str]) -> str:
    """The most common answer (ties: the one given first), as it was first written."""
    if not answers:
        return ""
    keys = [normalised(a) for a in answers]
    counts = Counter(keys)
    best = max(counts.values())
    winner = next(k for k in keys if counts[k] == best)
    return answers[keys.index(winner)]


def check_cascade(strategy: str, teacher: str) -> list[tuple[str, str]]:
    """Config problems of a cascade: it needs a `teacher` alias."""
    if strategy == "cascade" and not teacher:
        return [
            ("teacher", "`strategy: cascade` needs `teacher`: the model alias that answers when the student is unsure")
        ]
    return []


def demo_values(values: dict[str, Any], skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The input values a demo can hold: JSON values, without the `skip` ports (a conversation)
    or a missing optional one."""
    json_types = (str, int, float, bool, list, dict)
    return {k: v for k, v in values.items() if k not in skip and isinstance(v, json_types)}


def query_text(prompt: Prompt) -> str:
    """What a cascade's memory matches on: the prompt's text, or its last message."""
    return prompt.text if prompt.text is not None else prompt.messages[-1].content


Cascaded = CascadeOutcome
"""A cascade's answer, who gave it and why (`studio.node.CascadeOutcome`)."""


@dataclass(frozen=True)
class Cascade:
    """How a node runs `strategy: cascade`."""

    teacher: str
    """The teacher's model alias."""
    samples: int
    """Student samples per question."""
    agree: int
    """How many samples must give the same answer for the student's answer to stand."""
    recall: int
    """How many of the teacher's past answers the student gets as demos."""
    output: str
    """The demo field that holds the answer (`text`, `label`, `data`)."""
    confidence: float = 0.0
    """The lowest student confidence that stands (`llm.classify`: the label's calibrated share, on a
    model that scores labels); where no confidence is measured, the `agree` count alone decides."""


@dataclass(frozen=True)
class Vote:
    """One student sample: its answer and, where measured, its confidence."""

    answer: str
    confidence: float | None = None
    valid: bool = True
    """False for a sample that gave no usable answer (an object that never validated): it counts
    among the samples but never towards agreement."""


class Metered:
    """`ctx.llm` (or a teacher) that adds up what its calls cost; everything else is the model's."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.cost_usd = 0.0

    async def complete(self, **request: Any) -> Completion:
        """One call of the model, its cost added up."""
        reply = await self.llm.complete(**request)
        self.cost_usd += reply.cost_usd
        return reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self.llm, name)


def asker(llm: LLM, **defaults: Any) -> Ask:
    """An `Ask` over `llm` with default call options (stop, max_tokens)."""

    async def ask(prompt: Prompt, **options: Any) -> str:
        reply = await llm.complete(**prompt.request(), **{**defaults, **options})
        return reply.text.strip()

    return ask


async def cascade(
    plan: Cascade,
    ctx: NodeContext,
    query: str,
    inputs: dict[str, Any],
    render: Callable[[list[dict[str, Any]]], Prompt],
    **defaults: Any,
) -> Cascaded:
    """`llm.generate`'s cascade: the student's majority answer given the teacher's nearest past
    answers as demos (`render` puts them in the prompt), or the teacher's answer to the plain prompt."""

    async def student(demos: list[dict[str, Any]], llm: LLM) -> list[Vote]:
        return [Vote(a) for a in await samples(render(demos), asker(llm, **defaults), plan.samples)]

    async def teacher(llm: LLM) -> str:
        return await asker(llm, **defaults)(render([]))

    return await decide(plan, ctx, query, inputs, student, teacher)


Student = Callable[[list[dict[str, Any]], LLM], Awaitable[list[Vote]]]
"""`student(recalled demos, model)` → its sampled answers."""
Teacher = Callable[[LLM], Awaitable[str]]
"""`teacher(model)` → its answer."""


async def decide(
    plan: Cascade, ctx: NodeContext, query: str, inputs: dict[str, Any], student: Student, teacher: Teacher
) -> Cascaded:
    """Ask the student (with the teacher's `plan.recall` nearest past answers as demos); its
    majority answer stands when `plan.agree` samples give it and its confidence reaches
    `plan.confidence`, else the teacher answers and its answer is kept under `query`. While the
    memory warms, the teacher answers every call. Each outcome is noted in the memory."""
    metered = Metered(ctx.llm)
    votes: list[Vote] = []
    agreeing, sure = 0, None
    if not ctx.memory.warming:
        demos = [{**e.inputs, plan.output: e.output} for e in ctx.memory.nearest(query, plan.recall)]
        votes = await student(demos, metered)
        usable = [v for v in votes if v.valid]
        winner = majority([v.answer for v in usable])
        agreeing = sum(normalised(v.answer) == normalised(winner) for v in usable)
        sure = confidence([v for v in usable if normalised(v.answer) == normalised(winner)])
        needed = min(plan.agree, plan.samples)
        if usable and agreeing >= needed and (sure is None or sure >= plan.confidence):
            outcome = CascadeOutcome(
                winner, "student", _reason(agreeing, len(votes), needed, sure, plan), agreeing, len(votes),
                sure, metered.cost_usd,
            )  # fmt: skip
            ctx.memory.note(outcome)
            return outcome
        why = _reason(agreeing, len(votes), needed, sure, plan)
        if len(usable) < len(votes):
            why += f"; {len(votes) - len(usable)} gave no valid answer"
    else:
        why = "warming the memory"
    paid = Metered(ctx.llm_for(plan.teacher, why=why))
    answer = await teacher(paid)
    ctx.memory.remember(TeacherExample(query=query, inputs=inputs, output=answer))
    outcome = CascadeOutcome(answer, "teacher", why, agreeing, len(votes), sure, metered.cost_usd, paid.cost_usd)
    ctx.memory.note(outcome)
    return outcome


def confidence(agreeing: list[Vote]) -> float | None:
    """The student's confidence: the agreeing votes' mean label share where measured, else None
    (a plain `agree` count decides)."""
    measured = [v.confidence for v in agreeing if v.confidence is not None]
    if measured:
        return round(sum(measured) / len(measured), 4)
    return None


def _reason(agreeing: int, samples: int, needed: int, sure: float | None, plan: Cascade) -> str:
    said = f"{agreeing} of {samples} samples agreed ({needed} needed)"
    if sure is not None and plan.confidence:
        return f"{said}, confidence {sure:.2f} (threshold {plan.confidence:.2f})"
    return said
