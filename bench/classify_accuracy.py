"""Accuracy of a flow's `llm.classify` node on a labelled JSONL set.

Cuts the flow down to its classify node (the one whose `label` a flow output reads, or
`--node`), runs it through the engine once per example, with the LLM cache off so that
every call reaches the model, and prints ONE JSON object:
overall and per-label accuracy, the confusion counts, mean confidence and seconds per call.

Run (from the repository root):
    .venv/bin/python bench/classify_accuracy.py
    .venv/bin/python bench/classify_accuracy.py --flow flows/ticket-triage.yaml \
        --data flows/data/triage-labelled.jsonl --text-field ticket --label-field category
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FLOW = ROOT / "flows" / "ticket-triage.yaml"
DEFAULT_DATA = ROOT / "flows" / "data" / "triage-labelled.jsonl"
WARM_UP = "Hello."
"""Classified once before timing starts: loads the model and the node's calibration."""

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from nodes.llm_classify import Classify  # noqa: E402
from studio.flow.spec import load_flow_text  # noqa: E402
from studio.runtime.compiler import Plan, compile_flow  # noqa: E402
from studio.runtime.engine import Engine, RunOptions  # noqa: E402
from studio.store import MemoryStore  # noqa: E402


def load_examples(path: Path, text_field: str, label_field: str) -> list[tuple[str, str]]:
    """(text, gold label) pairs from a JSONL file; blank lines are skipped."""
    examples = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            examples.append((str(row[text_field]), str(row[label_field])))
    return examples


def classify_node_id(data: dict[str, Any], wanted: str | None) -> str:
    """The classify node to measure: `wanted`, else the one a flow output reads, else the first."""
    nodes: dict[str, Any] = data["nodes"]
    classify = [node_id for node_id, spec in nodes.items() if spec.get("type") == "llm.classify"]
    if wanted is not None:
        if wanted not in classify:
            raise SystemExit(f"node {wanted!r} is not an llm.classify node of this flow")
        return wanted
    if not classify:
        raise SystemExit("the flow has no llm.classify node")
    outputs = [str(v) for v in (data.get("outputs") or {}).values()]
    for node_id in classify:
        if f"${node_id}.label" in outputs:
            return node_id
    return classify[0]


def single_node_plan(flow_path: Path, wanted: str | None) -> tuple[Plan, str, str]:
    """A plan with only the classify node; returns it, the node id and the flow input it reads."""
    data = yaml.safe_load(flow_path.read_text(encoding="utf-8"))
    node_id = classify_node_id(data, wanted)
    spec = data["nodes"][node_id]
    reference = str((spec.get("inputs") or {}).get("text", ""))
    if not reference.startswith("$inputs."):
        raise SystemExit(f"node {node_id!r} must read its text from a flow input, not {reference!r}")
    input_name = reference.removeprefix("$inputs.")
    spec = {key: value for key, value in spec.items() if key not in ("when", "after")}
    outputs = {name: f"${node_id}.{name}" for name in Classify.Outputs.model_fields}
    cut = {
        "flowstudio": 1,
        "name": "classify-bench",
        "inputs": {input_name: {"type": "str"}},
        "outputs": outputs,
        "models": data.get("models") or {},
        "nodes": {node_id: spec},
    }
    flow = load_flow_text(json.dumps(cut), file=str(flow_path), path=flow_path)
    return compile_flow(flow), node_id, input_name


def measure(plan: Plan, input_name: str, examples: list[tuple[str, str]]) -> dict[str, Any]:
    """Run every example and summarise accuracy, confusion, confidence and time."""
    engine = Engine(MemoryStore())
    options = RunOptions(cache=False)
    engine.run_sync(plan, {input_name: WARM_UP}, options=options)
    seconds: list[float] = []
    confidences: list[float] = []
    confusion: Counter[tuple[str, str]] = Counter()
    mistakes = []
    for text, gold in examples:
        start = time.perf_counter()
        result = engine.run_sync(plan, {input_name: text}, options=options)
        seconds.append(time.perf_counter() - start)
        if result.status != "succeeded" or result.outputs is None:
            raise SystemExit(f"run failed on {text!r}: {result.error}")
        predicted = str(result.outputs["label"])
        confidence = result.outputs.get("confidence")
        if confidence is not None:
            confidences.append(float(confidence))
        confusion[(gold, predicted)] += 1
        if predicted != gold:
            mistakes.append({"text": text, "gold": gold, "predicted": predicted, "confidence": confidence})
    golds = Counter(gold for _, gold in examples)
    correct = sum(n for (gold, predicted), n in confusion.items() if gold == predicted)
    return {
        "examples": len(examples),
        "accuracy": round(correct / len(examples), 4),
        "per_label": {label: round(confusion[(label, label)] / count, 4) for label, count in sorted(golds.items())},
        "predicted": dict(Counter(predicted for (_, predicted), n in confusion.items() for _ in range(n))),
        "confusion": {f"{gold}->{predicted}": n for (gold, predicted), n in sorted(confusion.items())},
        "mean_confidence": round(statistics.fmean(confidences), 4) if confidences else None,
        "seconds_per_call": round(statistics.fmean(seconds), 4),
        "mistakes": mistakes,
    }


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the benchmark, print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flow", type=Path, default=DEFAULT_FLOW, help="flow file with an llm.classify node")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="labelled JSONL file")
    parser.add_argument("--node", default=None, help="id of the classify node (default: the one an output reads)")
    parser.add_argument("--text-field", default="ticket", help="JSONL field holding the text")
    parser.add_argument("--label-field", default="category", help="JSONL field holding the gold label")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N examples")
    parser.add_argument("--no-mistakes", action="store_true", help="leave the list of mistakes out")
    args = parser.parse_args(argv)
    examples = load_examples(args.data, args.text_field, args.label_field)[: args.limit]
    plan, node_id, input_name = single_node_plan(args.flow, args.node)
    report: dict[str, Any] = {
        "flow": str(args.flow),
        "data": str(args.data),
        "node": node_id,
        "models": {alias: spec.model for alias, spec in plan.models.items()},
        **measure(plan, input_name, examples),
    }
    if args.no_mistakes:
        report.pop("mistakes")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
