"""The multi-node tasks (`ticket`, `order`) and their bench flows, run on a scripted model.

The bench flows (bench/flows/ticket.yaml, bench/flows/order.yaml) are loaded as they are, with
only their model replaced by a scripted one whose rules answer each node for each example: the
flow must then produce the labelled final answer, and a wrong inner answer must change it.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from ruamel.yaml import YAML

from studio.evaluate.metrics import exact
from studio.evaluate.tasks import (
    CHANNELS,
    ITEMS,
    PRICES,
    QUANTITIES,
    SPLITS,
    TICKETS,
    generate,
    part,
)
from studio.flow.spec import load_flow_text
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine
from studio.store import MemoryStore
from tests.conftest import ROOT

FLOWS = ROOT / "bench" / "flows"


def _scripted(task: str, rules: list[dict[str, str]]) -> str:
    """The bench flow's text with its model replaced by a scripted one answering by `rules`."""
    data = YAML(typ="safe").load((FLOWS / f"{task}.yaml").read_text(encoding="utf-8"))
    data["models"] = {"default": {"model": "scripted", "retries": 0, "script": [*rules, {"reply": "no rule"}]}}
    return json.dumps(data)


def _run(flow_text: str, rows: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    plan = compile_flow(load_flow_text(flow_text))

    async def go() -> list[dict[str, Any] | None]:
        engine = Engine(MemoryStore())
        return [(await engine.run(plan, {"text": row["text"]})).outputs for row in rows]

    return asyncio.run(go())


def _words(text: str) -> str:
    found = re.search(r'"(.+)"', text)
    assert found, text
    return found.group(1)


def _numbers(text: str) -> tuple[int, int]:
    """Quantity and unit price: the two numbers of an order, told apart by their disjoint ranges."""
    found = [int(n) for n in re.findall(r"\d+", text)]
    assert len(found) == 2, text
    quantity = next(n for n in found if n in QUANTITIES)
    price = next(n for n in found if n in PRICES)
    return quantity, price


@pytest.mark.parametrize("task", ["ticket", "order"])
def test_multi_node_tasks_are_deterministic_per_seed(task: str) -> None:
    rows = generate(task, "test", 40, seed=5)
    assert rows == generate(task, "test", 40, seed=5)
    assert rows != generate(task, "test", 40, seed=6)
    assert len({r["text"] for r in rows}) > 30


def test_ticket_quotes_a_review_and_labels_only_the_final_answer() -> None:
    rows = generate("ticket", "train", 60, seed=1)
    assert all(set(r) == {"text", "label"} for r in rows)
    assert {r["label"] for r in rows} == {"positive", "negative"}
    for row in rows:
        assert re.search(r"\d{4}", row["text"]) and _words(row["text"]).endswith((".", "!"))


def test_order_total_is_quantity_times_price() -> None:
    rows = generate("order", "dev", 60, seed=2)
    assert all(set(r) == {"text", "total"} for r in rows)
    for row in rows:
        quantity, price = _numbers(row["text"])
        assert row["total"] == str(quantity * price)


@pytest.mark.parametrize(
    ("task", "pool"), [("ticket", CHANNELS), ("ticket", TICKETS), ("order", ITEMS), ("order", QUANTITIES)]
)
def test_new_pools_split_three_ways_without_overlap(task: str, pool: Any) -> None:
    shares = {split: set(part(pool, split)) for split in SPLITS}
    assert all(shares.values())
    assert not shares["train"] & shares["test"] and not shares["dev"] & shares["test"]
    assert not shares["train"] & shares["dev"]
    used = " ".join(r["text"] for r in generate(task, "test", 200))
    train_only = [w for w in shares["train"] if isinstance(w, str) and re.search(rf"\b{re.escape(w)}\b", used)]
    assert not train_only


def _ticket_rules(rows: list[dict[str, Any]], wrong: str | None = None) -> list[dict[str, str]]:
    rules = []
    for row in rows:
        words = _words(row["text"])
        rules.append({"match": re.escape(f"Ticket: {row['text']}\nThe customer's words:"), "reply": wrong or words})
        rules.append({"match": re.escape(f"Text: {words}"), "reply": row["label"]})
    if wrong is not None:
        rules.append({"match": re.escape(f"Text: {wrong}"), "reply": "positive"})
    return rules


def test_ticket_flow_labels_right_when_both_nodes_answer_right() -> None:
    rows = generate("ticket", "test", 6, seed=0)
    outputs = _run(_scripted("ticket", _ticket_rules(rows)), rows)
    assert [o and o["label"] for o in outputs] == [r["label"] for r in rows]


def test_ticket_flow_label_follows_the_words_node() -> None:
    """When `words` copies the wrong words (a positive review), `classify` sees only those."""
    rows = [r for r in generate("ticket", "test", 12, seed=0) if r["label"] == "negative"][:3]
    outputs = _run(_scripted("ticket", _ticket_rules(rows, wrong="What a lovely trip!")), rows)
    assert [o and o["label"] for o in outputs] == ["positive"] * len(rows)


def _order_rules(rows: list[dict[str, Any]], shift: int = 0) -> list[dict[str, str]]:
    rules = []
    for row in rows:
        quantity, price = _numbers(row["text"])
        rules.append({"match": re.escape(f"Order: {row['text']}\nHow many items:"), "reply": f" {quantity + shift}"})
        rules.append({"match": re.escape(f"Order: {row['text']}\nPrice of one item in dollars:"), "reply": f" {price}"})
    return rules


def test_order_flow_totals_right_when_both_extractors_answer_right() -> None:
    rows = generate("order", "test", 6, seed=0)
    outputs = _run(_scripted("order", _order_rules(rows)), rows)
    assert all(o is not None for o in outputs)
    assert [exact(r["total"], o and o["total"]) for r, o in zip(rows, outputs, strict=True)] == [1.0] * len(rows)


def test_order_flow_total_is_wrong_when_the_quantity_is() -> None:
    rows = generate("order", "test", 3, seed=0)
    outputs = _run(_scripted("order", _order_rules(rows, shift=1)), rows)
    for row, out in zip(rows, outputs, strict=True):
        quantity, price = _numbers(row["text"])
        assert out == {"total": (quantity + 1) * price}
