"""The bundled examples answer well on the embedded model: each scored on its small labelled set.

Every set lives in tests/data/examples/NAME.jsonl; each example must score at least `PASS` on
the metric that fits it. The figures are in docs/benchmarks.md ("Bundled examples on the
embedded model"). The model is loaded once for the module (runs are in-process).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import yaml

from studio.flow.spec import load_flow
from studio.models.local import is_installed
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine
from studio.store import MemoryStore
from tests.conftest import FLOWS, ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not is_installed(), reason="flowstudio models install smollm2"),
]

DATA = ROOT / "tests" / "data" / "examples"
PASS = 0.8
REFUSAL = re.compile(r"\b(unable|not equipped|as an? (ai|bot)|can't help|cannot help)\b", re.IGNORECASE)
DEMO_TICKET = "I was charged twice for my subscription this month."
"""The Makefile's DEMO_TICKET: what `make demo` asks."""


def _rows(name: str) -> list[dict[str, Any]]:
    lines = (DATA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


async def _run(name: str, inputs: dict[str, Any]) -> tuple[dict[str, Any], MemoryStore]:
    """One run of flows/NAME.yaml on its own model; its outputs and the store holding its calls."""
    store = MemoryStore()
    result = await Engine(store).run(compile_flow(load_flow(FLOWS / f"{name}.yaml")), inputs)
    assert result.status == "succeeded" and result.outputs is not None, result.error
    return result.outputs, store


async def ticket_triage(row: dict[str, Any]) -> bool:
    """Exact label."""
    outputs, _ = await _run("ticket-triage", {"ticket": row["ticket"]})
    return bool(outputs["category"] == row["category"])


async def route_question(row: dict[str, Any]) -> bool:
    """Exact route (the branch taken)."""
    outputs, _ = await _run("route-question", {"question": row["question"]})
    return bool(outputs["route"] == row["route"])


async def headline(row: dict[str, Any]) -> bool:
    """The summary invents no name the article lacks; the headline shares a word with the article."""
    outputs, _ = await _run("headline", {"article": row["article"]})
    article = row["article"].lower()
    names = re.findall(r"(?<!^)(?<![.!?] )\b[A-Z][a-z]+", outputs["summary"].strip())
    invented = [name for name in names if name.lower() not in article]
    shared = set(re.findall(r"[a-z]{4,}", outputs["headline"].lower())) & set(re.findall(r"[a-z]{4,}", article))
    return not invented and bool(shared)


async def handbook_qa(row: dict[str, Any]) -> bool:
    """The handbook's fact (one of its phrasings) is in the answer."""
    outputs, _ = await _run("handbook-qa", {"question": row["question"]})
    return any(fact.lower() in outputs["answer"].lower() for fact in row["facts"])


def _demo_words(*flows: str) -> set[str]:
    """Words of five letters or more in the demos' inputs of these flow files (what a copy would leak)."""
    words: set[str] = set()
    for flow in flows:
        for node in yaml.safe_load((FLOWS / flow).read_text(encoding="utf-8"))["nodes"].values():
            for demo in node.get("config", {}).get("demos", []):
                inputs = " ".join(str(v) for k, v in demo.items() if k != "text")
                words |= set(re.findall(r"[a-z]{5,}", inputs.lower()))
    return words


async def summarise_reviews(row: dict[str, Any]) -> bool:
    """The overall summary names something only its input says, and no summary what only a demo says."""
    outputs, _ = await _run("summarise-reviews", {"reviews": row["reviews"]})
    said = " ".join([outputs["overall"], *(r["summary"] for r in outputs["per_review"])]).lower()
    leaked = _demo_words("summarise-reviews.yaml", "parts/summarise-one.yaml") - set(
        re.findall(r"[a-z]+", " ".join(row["reviews"]).lower())
    )
    named = any(name in outputs["overall"].lower() for name in row["names"])
    return named and not leaked & set(re.findall(r"[a-z]+", said))


async def draft_critique_revise(row: dict[str, Any]) -> bool:
    """The final text is neither the draft nor a critique, nor a critique's wording."""
    outputs, store = await _run("draft-critique-revise", {"topic": row["topic"]})
    text = outputs["text"].strip()
    calls = [call for run in store.query_runs(limit=100) for call in store.calls(run.run_id)]
    earlier = {(c.response or "").strip() for c in calls if c.node.split(".")[-1] in ("draft", "critique")}
    return bool(text) and text not in earlier and "problem" not in text.lower()


METRICS: dict[str, Callable[[dict[str, Any]], Awaitable[bool]]] = {
    "ticket-triage": ticket_triage,
    "handbook-qa": handbook_qa,
    "headline": headline,
    "route-question": route_question,
    "summarise-reviews": summarise_reviews,
    "draft-critique-revise": draft_critique_revise,
}
"""Each example's metric on one labelled row."""


async def score(name: str) -> float:
    """The share of tests/data/examples/NAME.jsonl's rows the example gets right."""
    hits = [await METRICS[name](row) for row in _rows(name)]
    return sum(hits) / len(hits)


@pytest.mark.parametrize("name", sorted(METRICS))
async def test_example_scores_on_its_labelled_set(name: str) -> None:
    assert await score(name) >= PASS


async def test_the_demo_reply_answers_the_ticket() -> None:
    outputs, _ = await _run("ticket-triage", {"ticket": DEMO_TICKET})
    assert outputs["category"] == "billing" and outputs["reply"], outputs
    assert not REFUSAL.search(outputs["reply"]), outputs["reply"]


async def _report() -> None:
    for name in sorted(METRICS):
        print(f"{name}\t{await score(name):.3f}\t{len(_rows(name))} rows")


if __name__ == "__main__":  # .venv/bin/python -m tests.test_examples_quality prints the figures
    asyncio.run(_report())
