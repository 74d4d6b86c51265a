"""Fault injection for `flowstudio blame`: does blame name the node that was made to go wrong?

Five pipeline shapes (chain, branches, map-reduce, loop, agent with a calculator tool), each a
flow on one scripted model. Every example passes through every LLM node; each node's rule for an
example answers the right intermediate value. For each example one node (in turn) gets a fault:
a rule placed before the right one that answers a wrong value, with a `chance` (drawn per fault
from 0.3-0.6) of still answering wrongly when that node is re-sampled at temperature > 0 — the
fault is intermittent, as sampled models are. Downstream nodes fed a wrong value answer wrongly
(a catch-all rule), so the final answer is wrong whenever any node is. The benchmark runs the
batch, blames every failing example with the library (the same code as the CLI) and checks the
top-1 and top-2 blamed nodes against the injected one.

`--faults prompt` injects faults of another kind: every `llm.generate` node has two demos of its
own, and the fault answers wrongly on every sample (no `chance`) but only to the node's exact
prompt (its demos in their order); the same node shown other demos (one left out, another order)
answers right. Re-sampling then never fixes a fault and only the `demos` counterfactual kind can
(`--counterfactuals resample,demos`); faults go to the `llm.generate` nodes only (the map, loop
and agent nodes have no demos).

`--faults zero-shot` is the same with no demos anywhere: the fault answers wrongly to the node's
bare prompt only, and the node shown any demos answers right. Every fourth example runs clean, so
the experiment has runs that scored 1; the `demos` kind must build the node's demos from those
runs' steps (never from the failing example itself).

Run (from the repository root):
    .venv/bin/python bench/blame.py --examples 45 --seed 0
    .venv/bin/python bench/blame.py --examples 40 --seed 0 --faults prompt --counterfactuals resample,demos
    .venv/bin/python bench/blame.py --examples 40 --seed 0 --faults zero-shot --counterfactuals resample,demos
    .venv/bin/python bench/blame.py --examples 40 --seed 0 --faults zero-shot --counterfactuals resample,variant \
        --optimize 2000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from studio.evaluate import blame as lib  # noqa: E402
from studio.evaluate.batch import BatchOptions, prepare_batch, run_prepared  # noqa: E402
from studio.evaluate.counterfactuals import parse_kinds  # noqa: E402
from studio.optimize import OptimizeOptions, optimize, prepare  # noqa: E402
from studio.store import SQLiteStore  # noqa: E402

SHAPES = ("chain", "branches", "map_reduce", "loop", "agent")
NO_DEMOS = ("map", "loop", "g")
"""Culprit nodes that are no `llm.generate` node (no demos of their own)."""


@dataclass
class Shape:
    """A flow's nodes (YAML) and how it computes, per example, each LLM node's prompt and reply."""

    nodes: str
    culprits: tuple[str, ...]
    rules: Callable[[str, str | None, float], list[dict[str, Any]]]
    """(token, faulty node or None, chance) → the scripted rules of one example."""
    inputs: Callable[[str], dict[str, Any]]
    answer: Callable[[str], str]


def _rule(match: str, reply: str, chance: float | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"match": match, "reply": reply}
    if chance is not None:
        rule["chance"] = chance
    return rule


FAULTS = ["sampled"]
"""Set by --faults: `sampled` (intermittent), `prompt` (bound to a node's exact prompt, its own demos
in order) or `zero-shot` (bound to a node's bare prompt, no demos)."""
CLEAN_EVERY = 4
"""With --faults zero-shot, every fourth example has no fault: the good runs demos are drawn from."""
DEMO_VALUES = ("dq1", "dq2")
"""The values of the two demos each `llm.generate` node has with --faults prompt."""

REPAIR = [0.0]
"""Set by --repair: the share of samples in which a node fed a wrong value still answers right
(a confounder: re-sampling a node downstream of the culprit then fixes the answer too)."""


def _step(node: str, given: str, right: str, faulty: bool, chance: float) -> list[dict[str, Any]]:
    """A node's rules for one prompt: the fault first (when injected), then the right reply; with
    --repair, a wrong input (`bad-...`) is answered right in that share of samples (never greedily)."""
    match = f"^{node}: {re.escape(given)}$"
    rules = [_rule(match, f"bad-{node}-{right}", chance)] if faulty else []
    if FAULTS[0] == "prompt":  # the fault answers only the node's own prompt: its two demos in order
        first, second = (f"{node}: [^\n]*{value}[^\n]*\n\n" for value in DEMO_VALUES)
        own = f"^{first}{second}{node}: {re.escape(given)}$"
        rules = [_rule(own, f"bad-{node}-{right}")] if faulty else []
    if FAULTS[0] == "zero-shot":  # the fault answers only the bare prompt, on every sample
        rules = [_rule(match, f"bad-{node}-{right}")] if faulty else []
    if FAULTS[0] != "sampled":
        match = f"(?:^|\n\n){node}: {re.escape(given)}$"  # after any (other) demos: the right reply
    if REPAIR[0] > 0:
        pieces = [r"(?:bad-[A-Z]-)?" + re.escape(piece) for piece in given.split(" ")]
        bad = f"^{node}: (?=.*bad-)" + r"\ ".join(pieces) + "$"
        if FAULTS[0] != "sampled":  # the same question after the node's demos
            bad = f"(?:^|\\n\\n){node}: (?=[^\\n]*bad-)" + r"\ ".join(pieces) + "$"
        rules += [_rule(bad, f"wrong-{node}", round(1 - REPAIR[0], 3)), _rule(bad, right)]
    return [*rules, _rule(match, right)]


def _chain(token: str, fault: str | None, chance: float) -> list[dict[str, Any]]:
    a, b, c = f"a-{token}", f"b-{token}", f"c-{token}"
    return [
        *_step("A", token, a, fault == "a", chance),
        *_step("B", a, b, fault == "b", chance),
        *_step("C", b, c, fault == "c", chance),
    ]


def _branches(token: str, fault: str | None, chance: float) -> list[dict[str, Any]]:
    a, b = f"a-{token}", f"b-{token}"
    return [
        *_step("A", token, a, fault == "a", chance),
        *_step("B", token, b, fault == "b", chance),
        *_step("C", f"{a} + {b}", f"c-{token}", fault == "c", chance),
    ]


def _map_reduce(token: str, fault: str | None, chance: float) -> list[dict[str, Any]]:
    parts = [f"{token}p{i}" for i in range(3)]
    rules: list[dict[str, Any]] = []
    for i, part in enumerate(parts):  # the map's fault hits one item
        rules += _step("M", part, f"m-{part}", fault == "map" and i == 1, chance)
    joined = " ".join(f"m-{p}" for p in parts)
    rules += _step("R", joined, f"r-{token}", fault == "r", chance)
    rules += _step("F", f"r-{token}", f"f-{token}", fault == "f", chance)
    return rules


def _loop(token: str, fault: str | None, chance: float) -> list[dict[str, Any]]:
    a = f"a-{token}"
    rules = _step("A", token, a, fault == "a", chance)
    rules += _step("S", a, f"s1-{token}", fault == "loop", chance)  # the loop's fault: first iteration
    rules += _step("S", f"s1-{token}", f"s2-{token}", False, chance)
    rules += _step("C", f"s2-{token}", f"c-{token}", fault == "c", chance)
    return rules


def _numbers(token: str) -> tuple[int, int]:
    seed = int(re.sub(r"\D", "", token) or 0)
    return 11 + seed % 37, 3 + seed % 11


def _agent(token: str, fault: str | None, chance: float) -> list[dict[str, Any]]:
    x, y = _numbers(token)
    question = f"What is {x} times {y}?"
    rules = _step("A", token, question, fault == "a", chance)
    ask = f"Question: {re.escape(question)}\\n$"
    if fault == "g":  # the agent's fault: a wrong calculator input
        rules.append(_rule(ask, f"Action: calculator\nInput: {x} * {y + 1}", chance))
    rules.append(_rule(ask, f"Action: calculator\nInput: {x} * {y}"))
    for value in (x * y, x * (y + 1)):
        rules.append(_rule(f"Observation: {value}\\n$", f"Answer: {value}"))
    rules += _step("C", f"{x * y} for {token}", f"c-{token}", fault == "c", chance)  # unique per example
    return rules


def _generate(node: str, inputs: str, prompt: str) -> str:
    return f"""  {node}:
    type: llm.generate
    inputs: {{{inputs}}}
    config: {{form: completion, prompt: "{prompt}"DEMOS[{inputs}]}}
"""


def _demos(text: str) -> str:
    """With --faults prompt, each `llm.generate` node gets two demos of its own (their values
    DEMO_VALUES); without, none. Placeholders `DEMOS[inputs]` in the shapes' YAML are replaced."""

    def demos(found: re.Match[str]) -> str:
        if FAULTS[0] != "prompt":
            return ""
        names = [part.split(":")[0].strip() for part in found.group(1).split(",")]
        listed = ", ".join(
            "{" + ", ".join(f"{name}: {value}" for name in names) + f", text: {value}-out" + "}"
            for value in DEMO_VALUES
        )
        return f", demos: [{listed}]"

    return re.sub(r"DEMOS\[([^\]]*)\]", demos, text)


SHAPE_TABLE: dict[str, Shape] = {
    "chain": Shape(
        _generate("a", "x: $inputs.x", "A: {{ x }}")
        + _generate("b", "v: $a.text", "B: {{ v }}")
        + _generate("c", "v: $b.text", "C: {{ v }}"),
        ("a", "b", "c"),
        _chain,
        lambda t: {"x": t},
        lambda t: f"c-{t}",
    ),
    "branches": Shape(
        _generate("a", "x: $inputs.x", "A: {{ x }}")
        + _generate("b", "x: $inputs.x", "B: {{ x }}")
        + _generate("c", "a: $a.text, b: $b.text", "C: {{ a }} + {{ b }}"),
        ("a", "b", "c"),
        _branches,
        lambda t: {"x": t},
        lambda t: f"c-{t}",
    ),
    "map_reduce": Shape(
        """  map:
    type: control.map
    inputs: {items: $inputs.x}
    config:
      flow:
        flowstudio: 1
        name: item
        inputs: {item: {type: str}}
        outputs: {text: $m.text}
        models: {default: {model: "scripted/script.yaml", retries: 0}}
        nodes:
          m: {type: llm.generate, inputs: {v: $inputs.item}, config: {form: completion, prompt: "M: {{ v }}"}}
  join:
    type: text.template
    inputs: {results: $map.results}
    config: {template: "{% for r in results %}{{ r.text }}{% if not loop.last %} {% endif %}{% endfor %}"}
"""
        + _generate("r", "v: $join.text", "R: {{ v }}")
        + _generate("f", "v: $r.text", "F: {{ v }}"),
        ("map", "r", "f"),
        _map_reduce,
        lambda t: {"x": [f"{t}p{i}" for i in range(3)]},
        lambda t: f"f-{t}",
    ),
    "loop": Shape(
        _generate("a", "x: $inputs.x", "A: {{ x }}")
        + """  loop:
    type: control.loop
    inputs: {s: $a.text, k: 0}
    config:
      until: outputs.k | int >= 2
      max_iterations: 2
      flow:
        flowstudio: 1
        name: refine
        inputs: {s: {type: str}, k: {type: int}}
        outputs: {s: $s.text, k: $inc.text}
        models: {default: {model: "scripted/script.yaml", retries: 0}}
        nodes:
          s: {type: llm.generate, inputs: {v: $inputs.s}, config: {form: completion, prompt: "S: {{ v }}"}}
          inc: {type: text.template, inputs: {k: $inputs.k}, config: {template: "{{ k + 1 }}"}}
"""
        + _generate("c", "v: $loop.s", "C: {{ v }}"),
        ("a", "loop", "c"),
        _loop,
        lambda t: {"x": t},
        lambda t: f"c-{t}",
    ),
    "agent": Shape(
        _generate("a", "x: $inputs.x", "A: {{ x }}")
        + """  g:
    type: llm.agent
    inputs: {task: $a.text}
    config: {tools: [calculator], max_turns: 4}
"""
        + _generate("c", "v: $g.answer, x: $inputs.x", "C: {{ v }} for {{ x }}"),
        ("a", "g", "c"),
        _agent,
        lambda t: {"x": t},
        lambda t: f"c-{t}",
    ),
}


def flow_text(shape: str) -> str:
    """The flow of one shape; its model is `scripted/script.yaml` next to it."""
    x_type = "list[str]" if shape == "map_reduce" else "str"
    return f"""flowstudio: 1
name: blame-{shape.replace("_", "-")}
inputs:
  x: {{type: "{x_type}"}}
outputs:
  answer: ${"f" if shape == "map_reduce" else "c"}.text
models:
  default: {{model: scripted/script.yaml, retries: 0}}
nodes:
{_demos(SHAPE_TABLE[shape].nodes)}"""


def write_shape(shape: str, folder: Path, examples: int, seed: int) -> dict[str, str | None]:
    """Write flow, script and dataset of one shape; returns each example's token → injected node
    (None for a clean example)."""
    spec = SHAPE_TABLE[shape]
    rng = random.Random(f"{shape}-{seed}")
    faults: dict[str, str | None] = {}
    rules: list[dict[str, Any]] = []
    rows = []
    culprits = [c for c in spec.culprits if c not in NO_DEMOS] if FAULTS[0] != "sampled" else spec.culprits
    for i in range(examples):
        token = f"t{seed}x{i}"
        clean = FAULTS[0] == "zero-shot" and i % CLEAN_EVERY == CLEAN_EVERY - 1
        node = None if clean else culprits[i % len(culprits)]
        faults[token] = node
        rules += spec.rules(token, node, round(rng.uniform(0.3, 0.6), 2))
        rows.append({**spec.inputs(token), "answer": spec.answer(token)})
    for node in ("A", "B", "C", "M", "R", "F", "S"):  # a wrong input gives a wrong answer downstream
        rules.append(_rule(f"^{node}: ", f"wrong-{node}"))
    rules.append(_rule("Observation: ", "Answer: 0"))
    rules.append(_rule("Question: ", "Answer: 0"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "script.yaml").write_text(json.dumps({"script": rules}), encoding="utf-8")
    (folder / "flow.yaml").write_text(flow_text(shape), encoding="utf-8")
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return faults


async def optimized(folder: Path, store: SQLiteStore, budget: int) -> list[str]:
    """Optimize the shape's flow on its own examples (given as train and dev, which the optimizer
    splits) into `store`; the nodes the chosen flow changed."""
    data = str(folder / "data.jsonl")
    options = OptimizeOptions(
        flow=str(folder / "flow.yaml"), train=data, dev=data, metric="exact", budget_calls=budget, proposer="none"
    )
    result = await optimize(prepare(options), store)
    paths = (folder / "flow.yaml", Path(result.report["flow_out"]))
    before, after = (yaml.safe_load(path.read_text(encoding="utf-8"))["nodes"] for path in paths)
    return sorted(node for node, spec in after.items() if spec != before.get(node))


async def bench_shape(
    shape: str,
    folder: Path,
    examples: int,
    seed: int,
    samples: int,
    kinds: tuple[str, ...] = ("resample",),
    optimize_calls: int = 0,
) -> dict[str, Any]:
    """Batch one shape (optimize it first with `optimize_calls`), blame every failing example, score
    the attribution."""
    faults = write_shape(shape, folder, examples, seed)
    store = SQLiteStore(folder / "store.db")
    options = BatchOptions(flow=str(folder / "flow.yaml"), data=str(folder / "data.jsonl"), metric="exact")
    result = await run_prepared(prepare_batch(options, store), store)
    changed = await optimized(folder, store, optimize_calls) if optimize_calls else []
    failing = lib.failing_of_experiment(store, result.experiment_id)
    start = time.perf_counter()
    budget = lib.DEFAULT_BUDGET_CALLS * len(failing)  # the whole blame's: each failing example as before
    blaming = lib.BlameOptions(samples=samples, budget_calls=budget, counterfactuals=kinds)
    blames = await lib.blame_all(store, failing, blaming)
    seconds = time.perf_counter() - start
    top1 = top2 = 0
    by_kind: dict[str, dict[str, int]] = {}
    for item, blame in zip(failing, blames, strict=True):
        truth = faults[_token(item.record.inputs["x"])]
        ranked = [n.node for n in blame.nodes if n.flips]
        top1 += ranked[:1] == [truth]
        top2 += truth in ranked[:2]
        for node in blame.nodes:
            for kind, tally in node.kinds.items():
                row = by_kind.setdefault(kind, {"samples": 0, "flips": 0, "calls": 0, "culprit_flips": 0})
                row["samples"] += tally.samples
                row["flips"] += tally.flips
                row["calls"] += tally.calls
                row["culprit_flips"] += tally.flips if node.node == truth else 0
    store.close()
    n = len(blames)
    return {
        "shape": shape,
        "faults": sum(node is not None for node in faults.values()),
        "failing": n,
        "top1": top1,
        "top2": top2,
        "calls": sum(b.calls for b in blames),
        "kinds": by_kind,
        "seconds": round(seconds, 1),
        **({"optimizer_changed": changed} if optimize_calls else {}),
    }


def _token(x: Any) -> str:
    return str(x[0]).rsplit("p", 1)[0] if isinstance(x, list) else str(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=45, help="Examples per shape (each one fault, but clean ones).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samples", type=int, default=lib.DEFAULT_SAMPLES, help="Re-samples per node.")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--repair", type=float, default=0.0, help="Share of samples a wrong input is fixed in.")
    parser.add_argument("--faults", choices=("sampled", "prompt", "zero-shot"), default="sampled", help="Fault kind.")
    parser.add_argument("--counterfactuals", default="resample", help="Blame's counterfactual kinds, comma-separated.")
    parser.add_argument("--optimize", type=int, default=0, help="Optimize each flow first, with this many calls.")
    args = parser.parse_args()
    REPAIR[0] = args.repair
    FAULTS[0] = args.faults
    kinds = parse_kinds(args.counterfactuals)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes.split(","):
            folder = Path(tmp) / shape
            row = asyncio.run(bench_shape(shape, folder, args.examples, args.seed, args.samples, kinds, args.optimize))
            rows.append(row)
            print(json.dumps(row), flush=True)
    failing = sum(r["failing"] for r in rows)
    total = {
        "shape": "all",
        "faults": sum(r["faults"] for r in rows),
        "failing": failing,
        "top1_accuracy": round(sum(r["top1"] for r in rows) / max(failing, 1), 4),
        "top2_accuracy": round(sum(r["top2"] for r in rows) / max(failing, 1), 4),
        "calls_per_failing": round(sum(r["calls"] for r in rows) / max(failing, 1), 2),
    }
    print(json.dumps(total), flush=True)


if __name__ == "__main__":
    main()
