"""The node library on the embedded model: `llm.agent` on calculator questions, `llm.structured` validity.

Agent: flows/calculator-agent.yaml over 20 arithmetic questions (the first 10 were used while
tuning the text protocol, the last 10 were not), through the engine with the LLM cache off:
answers right, turns and tokens per question, seconds. Structured: 10 extraction examples over
two field lists and one JSON Schema, with and without one demo: replies valid (first try and
after re-asks), values right, model calls and tokens. Prints ONE JSON object.

Run (from the repository root):
    .venv/bin/python bench/node_library.py
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from studio.flow.spec import load_flow, load_flow_text  # noqa: E402
from studio.runtime.compiler import compile_flow  # noqa: E402
from studio.runtime.engine import Engine, RunOptions  # noqa: E402
from studio.store import MemoryStore  # noqa: E402

QUESTIONS = [
    ("What is 12 times 7?", 84), ("What is 144 divided by 12?", 12), ("What is 35 plus 58?", 93),
    ("What is 1000 minus 357?", 643), ("How much is 23 times 4 plus 6?", 98), ("What is 81 divided by 9?", 9),
    ("What is 250 plus 750?", 1000), ("What is 19 times 21?", 399), ("What is 7 to the power of 3?", 343),
    ("A box holds 24 eggs. How many eggs are in 6 boxes?", 144),
    ("What is 45 times 3?", 135), ("What is 900 divided by 30?", 30), ("What is 123 plus 456?", 579),
    ("What is 72 minus 19?", 53), ("How much is 8 times 9 plus 10?", 82), ("What is 17 times 17?", 289),
    ("What is 2 to the power of 10?", 1024), ("A ticket costs 15 euros. How much do 7 tickets cost?", 105),
    ("What is 1234 minus 567?", 667), ("What is 56 divided by 8?", 7),
]  # fmt: skip
PERSON = {"prompt": "Text: {{ text }}", "fields": {"name": "str", "age": "int"}}
PRODUCT = {"prompt": "Listing: {{ text }}", "fields": {"product": "str", "price": "float", "in_stock": "bool"}}
TICKET = {
    "prompt": "Ticket: {{ text }}",
    "json_schema": {
        "type": "object",
        "properties": {
            "category": {"type": "string", "enum": ["billing", "bug", "other"]},
            "urgent": {"type": "boolean"},
        },
        "required": ["category", "urgent"],
    },
}
DEMOS = {
    "person": [{"text": "Maria turned 51 last week.", "data": {"name": "Maria", "age": 51}}],
    "product": [
        {"text": "Blue mug, $8.50, sold out", "data": {"product": "Blue mug", "price": 8.5, "in_stock": False}}
    ],
    "ticket": [{"text": "The app crashes when I log in, fix it ASAP", "data": {"category": "bug", "urgent": True}}],
}
EXAMPLES = [
    ("person", "Bob, aged 42, lives in Paris.", {"name": "Bob", "age": 42}),
    ("person", "Alice is 30 years old and works as a nurse.", {"name": "Alice", "age": 30}),
    ("person", "My grandfather Tom is 87.", {"name": "Tom", "age": 87}),
    ("person", "Yesterday Priya celebrated her 25th birthday.", {"name": "Priya", "age": 25}),
    ("product", "Red wool scarf for $19.99, in stock", {"product": "Red wool scarf", "price": 19.99, "in_stock": True}),
    ("product", "Steel water bottle - 12 dollars - out of stock", {"product": "Steel water bottle", "price": 12, "in_stock": False}),
    ("product", "Desk lamp, price 45.00 USD, available now", {"product": "Desk lamp", "price": 45, "in_stock": True}),
    ("ticket", "I was charged twice for my subscription this month", {"category": "billing"}),
    ("ticket", "The export button does nothing when I click it", {"category": "bug"}),
    ("ticket", "Do you have an office in Berlin?", {"category": "other"}),
]  # fmt: skip
OPTIONS = RunOptions(cache=False)


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return got is want
    if isinstance(want, (int, float)):
        return isinstance(got, (int, float)) and abs(got - want) < 1e-9
    return str(got).strip().lower() == str(want).strip().lower()


async def agent() -> dict[str, Any]:
    plan = compile_flow(load_flow(ROOT / "flows" / "calculator-agent.yaml"))
    engine = Engine(MemoryStore())
    rows = []
    start = time.perf_counter()
    for question, expected in QUESTIONS:
        result = await engine.run(plan, {"question": question}, options=OPTIONS)
        outputs = result.outputs or {}
        try:
            right = abs(float(str(outputs.get("answer")).replace(",", "")) - expected) < 1e-9
        except ValueError:
            right = False
        rows.append({"right": right, "turns": len(outputs.get("turns") or []), "tokens": result.tokens})
    seconds = time.perf_counter() - start
    tuned, held_out = rows[:10], rows[10:]
    return {
        "questions": len(rows),
        "right_tuned": sum(r["right"] for r in tuned),
        "right_held_out": sum(r["right"] for r in held_out),
        "turns_per_question": sum(r["turns"] for r in rows) / len(rows),
        "tokens_per_question": sum(r["tokens"] for r in rows) / len(rows),
        "seconds_per_question": round(seconds / len(rows), 2),
    }


async def structured(with_demos: bool) -> dict[str, Any]:
    configs = {"person": PERSON, "product": PRODUCT, "ticket": TICKET}
    valid = first_try = right = calls = tokens = 0
    for kind, text, expected in EXAMPLES:
        config = {**configs[kind], **({"demos": DEMOS[kind]} if with_demos else {})}
        flow = {
            "flowstudio": 1,
            "name": "structured",
            "inputs": {"text": {"type": "str"}},
            "outputs": {"data": "$extract.data"},
            "models": {"default": {"model": "local/smollm2", "temperature": 0, "max_tokens": 80}},
            "nodes": {"extract": {"type": "llm.structured", "inputs": {"text": "$inputs.text"}, "config": config}},
        }
        store = MemoryStore()
        result = await Engine(store).run(
            compile_flow(load_flow_text(json.dumps(flow))), {"text": text}, options=OPTIONS
        )
        made = len(store.calls(result.run_id))
        calls, tokens = calls + made, tokens + result.tokens
        if result.status == "succeeded" and result.outputs:
            valid += 1
            first_try += made == 1
            right += all(_same(result.outputs["data"].get(k), v) for k, v in expected.items())
    n = len(EXAMPLES)
    return {
        "examples": n,
        "valid": valid,
        "valid_first_try": first_try,
        "values_right": right,
        "calls": calls,
        "tokens": tokens,
    }


async def main() -> None:
    report = {
        "agent": await agent(),
        "structured_no_demos": await structured(False),
        "structured_one_demo": await structured(True),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
