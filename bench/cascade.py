"""Cascades on the generated tasks: the embedded model as the student, a priced oracle as the teacher.

For each task of `studio.evaluate.tasks` (disjoint train/test vocabulary), a flow with one node
(`llm.classify` for sentiment and topic, `llm.generate` for arithmetic) runs three ways over the
same stream of test examples, one at a time, LLM cache off:

- the teacher alone: a scripted oracle that answers every example right, priced per token like a
  large model (`--input-price`, `--output-price`, USD per million tokens);
- the student alone: `local/smollm2` (price 0: it runs on this machine), zero-shot;
- the cascade: the student with `strategy: cascade` (classify: one sample, a confidence
  threshold; generate: `samples` samples, `agree` must agree), its memory first warmed with the
  teacher's answers to the train split (`batch --warm-cascade` does the same).

Prints ONE JSON object: per task, accuracy and cost per example of each way, the cascade's
teacher calls and its escalation rate per window of 50 calls, and whether the goal (accuracy
>= 0.95 x the teacher's at <= 0.5 x its cost) is met.

    .venv/bin/python bench/cascade.py --tasks sentiment,topic,arithmetic --train 40 --test 300
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from studio.evaluate.tasks import generate  # noqa: E402
from studio.flow.spec import load_flow_text  # noqa: E402
from studio.runtime.compiler import compile_flow  # noqa: E402
from studio.runtime.engine import Engine, RunOptions  # noqa: E402
from studio.store import MemoryStore  # noqa: E402

TASKS: dict[str, dict[str, Any]] = {
    "sentiment": {
        "field": "text",
        "gold": "label",
        "node": {"type": "llm.classify", "config": {
            "instructions": "Is this review positive or negative?", "labels": ["positive", "negative"]}},
    },
    "topic": {
        "field": "text",
        "gold": "label",
        "node": {"type": "llm.classify", "config": {
            "instructions": "What is this news item about?", "labels": ["sports", "business", "science", "politics"]}},
    },
    "arithmetic": {
        "field": "question",
        "gold": "answer",
        "node": {"type": "llm.generate", "config": {"form": "completion", "prompt": "Question: {{ question }}\nAnswer:",
                                                   "max_tokens": 12, "stop": ["\n"]}},
    },
}  # fmt: skip


def flow_text(task: str, way: str, oracle: list[dict[str, str]], args: argparse.Namespace) -> str:
    """The flow of one way (`teacher`, `student`, `cascade`) as JSON text (YAML reads JSON)."""
    spec = TASKS[task]
    field = spec["field"]
    node: dict[str, Any] = {**spec["node"], "inputs": {field: f"$inputs.{field}"}}
    config = dict(node["config"])
    if way == "teacher":
        node["model"] = "big"
    if way == "cascade":
        config.update(strategy="cascade", teacher="big", recall=args.recall)
        if node["type"] == "llm.classify":
            config.update(samples=1, agree=1, threshold=args.threshold)
        else:
            config.update(samples=args.samples, agree=args.agree)
    node["config"] = config
    output = "label" if node["type"] == "llm.classify" else "text"
    script = [{"match": re.escape(row[field]), "reply": row[spec["gold"]]} for row in oracle]
    flow = {
        "flowstudio": 1,
        "name": f"cascade-{task}",
        "inputs": {field: {"type": "str"}},
        "outputs": {"answer": f"$answer.{output}"},
        "models": {
            "default": {"model": "local/smollm2", "temperature": 0, "max_tokens": 8},
            "big": {
                "model": "scripted",
                "script": [*script, {"reply": "?"}],
                "input_cost_per_token": args.input_price / 1e6,
                "output_cost_per_token": args.output_price / 1e6,
            },
        },
        "nodes": {"answer": node},
    }
    return json.dumps(flow)


def last_word(answer: str) -> str:
    """What is scored: the last word of the first line (`88 - 11 = 77` → `77`), as bench/flows/arithmetic.yaml."""
    words = (answer.strip().split("\n") or [""])[0].split()
    return words[-1].rstrip(".") if words else ""


async def stream(engine: Engine, text: str, rows: list[dict[str, str]], task: str) -> dict[str, Any]:
    """Run `rows` one at a time; accuracy, cost per example and seconds."""
    spec = TASKS[task]
    plan = compile_flow(load_flow_text(text))
    right, cost, started = 0, 0.0, time.perf_counter()
    for row in rows:
        result = await engine.run(plan, {spec["field"]: row[spec["field"]]}, options=RunOptions(cache=False))
        answer = last_word(str((result.outputs or {}).get("answer", "")))
        right += answer == row[spec["gold"]]
        cost += sum(c.cost_usd for c in engine.store.calls(result.run_id))
    n = len(rows)
    print(f"{task}: {n} examples, accuracy {right / n:.3f}, {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return {
        "accuracy": round(right / n, 4),
        "cost_per_example": cost / n,
        "seconds": round(time.perf_counter() - started, 1),
    }


async def measure(task: str, args: argparse.Namespace) -> dict[str, Any]:
    """The three ways on one task."""
    train = generate(task, "train", args.train, seed=args.seed)
    test = generate(task, "test", args.test, seed=args.seed)
    found: dict[str, Any] = {}
    for way in ("teacher", "student"):
        found[way] = await stream(Engine(MemoryStore()), flow_text(task, way, train + test, args), test, task)
    engine = Engine(MemoryStore())
    text = flow_text(task, "cascade", train + test, args)
    engine.memories.warming = True
    warm = await stream(engine, text, train, task)
    engine.memories.warming = False
    cascade = await stream(engine, text, test, task)
    decisions = [d for d in engine.memories.book.decisions(f"cascade-{task}") if d.reason != "warming the memory"]
    escalated = [d.by == "teacher" for d in decisions]
    cascade["teacher_calls"] = sum(escalated)
    cascade["escalation_per_50"] = [round(sum(escalated[i : i + 50]) / len(escalated[i : i + 50]), 2)
                                    for i in range(0, len(escalated), 50)]  # fmt: skip
    cascade["warm_cost"] = warm["cost_per_example"] * len(train)
    found["cascade"] = cascade
    teacher = found["teacher"]
    found["accuracy_vs_teacher"] = round(cascade["accuracy"] / teacher["accuracy"], 3)
    found["cost_vs_teacher"] = round(cascade["cost_per_example"] / teacher["cost_per_example"], 3)
    found["goal_met"] = found["accuracy_vs_teacher"] >= 0.95 and found["cost_vs_teacher"] <= 0.5
    saving = teacher["cost_per_example"] - cascade["cost_per_example"]
    found["break_even_examples"] = round(cascade["warm_cost"] / saving) if saving > 0 else None
    return found


def main() -> None:
    """Parse the options, measure each task, print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="sentiment,topic,arithmetic")
    parser.add_argument("--train", type=int, default=40, help="Examples warming the memory.")
    parser.add_argument("--test", type=int, default=300, help="The stream's length.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threshold", type=float, default=0.9, help="Classify: the confidence that stands.")
    parser.add_argument("--samples", type=int, default=3, help="Generate: student samples.")
    parser.add_argument("--agree", type=int, default=3, help="Generate: samples that must agree.")
    parser.add_argument("--recall", type=int, default=4, help="Teacher answers recalled as demos.")
    parser.add_argument("--input-price", type=float, default=3.0, help="Teacher, USD per million input tokens.")
    parser.add_argument("--output-price", type=float, default=15.0, help="Teacher, USD per million output tokens.")
    args = parser.parse_args()
    settings = {k: v for k, v in vars(args).items() if k != "tasks"}
    results = {task: asyncio.run(measure(task, args)) for task in args.tasks.split(",")}
    print(json.dumps({"settings": settings, "tasks": results}, indent=1))


if __name__ == "__main__":
    main()
