"""The DSPy side of bench/dspy_compare.py: DSPy's optimizers on one task, on the embedded model.

Runs INSIDE bench/.venv-dspy (bash bench/setup_dspy.sh), never in the project's venv. For one
task, seed and adapter it builds a DSPy program equivalent to `bench/flows/TASK.yaml` (one
`dspy.Predict` whose signature has the flow's input and output and the flow's instructions;
arithmetic keeps the last word of the reply's first line, as the flow's template node does),
optimizes it with BootstrapFewShotWithRandomSearch and/or MIPROv2(auto="light") on the same
train and dev files as ours (trainset=train, valset=dev), and scores the result on test.

The model is ours: `studio.models.local` (imported from the repository root), the very client the
flows use, so the same GGUF file, chat template, seed and temperature 0. A thin `dspy.BaseLM`
subclass forwards each request to it and counts every call at the model: bootstrapping, the
MIPROv2 proposer's calls (the proposer is the same embedded model, as ours is), evaluation, and
adapter retries. The count has a hard cap: the call past the budget raises `BudgetSpent`, a
BaseException that DSPy's per-example `except Exception` handlers let through, so no optimizer
can exceed it. Test scoring is counted apart, like ours.

Knobs. DSPy's defaults, except `num_threads=1` (one model, one CPU) and `max_errors` unbounded
(a malformed reply scores 0 instead of aborting the run). Neither optimizer has a call-budget
knob, so the budget is the cap: BFSRS evaluates its candidates in a fixed order (zero-shot,
labelled demos, unshuffled bootstrap, then shuffled bootstraps of 1-4 demos), each on all of
dev; MIPROv2 light fixes its own knobs (6 demo sets, 3 instructions, 10 trials; with a dev set
under 50 examples every trial is a full dev evaluation). Either is stopped by the cap where it
runs out, and the program it would return at that point is kept: the best one by full-dev score
among the evaluations finished within the budget. Both optimizers' trajectories do not depend on
the cap, so one run at the largest budget gives the result at every smaller budget in
`--budgets` (the best program finished within each), each scored on test.

The multi-node tasks get a two-module program, each module a `dspy.Predict` whose field prefixes are
the flow node's prompt cues: `ticket` is Predict(text -> words) then Predict(words -> label), as the
flow copies the customer's words and classifies them; `order` is Predict(text -> quantity) and
Predict(text -> price), then Python multiplies them with the flow's own calculator tool
(`nodes.calculator`; an expression it cannot read scores 0, as the flow's failed run does). Only
the final output is labelled; BootstrapFewShot fills the inner modules' demos from good traces.

Adapters: `chat` is DSPy's native ChatAdapter (it needs room for its `[[ ## field ## ]]` markers,
so it gets the flow's max_tokens + 24 and no stop sequence); `template` is a plain completion
prompt (instructions and the output field's description, then `Field: value` lines per demo
and for the question, ending in the output field's name), sent as a raw completion with the flow's max_tokens and stop; the reply so cut
is the answer (one line for the classify flows, whose stop is a newline; arithmetic keeps the last
word of its first line like the flow; for a signature with more outputs, later `Field: value` lines).
With `template` every predictor uses it, MIPROv2's instruction proposer too; with `chat` the proposer
uses DSPy's default ChatAdapter (JSON fallback included). An optimizer that raises (MIPROv2's
proposer cannot always parse the 135M model's replies) is reported as `error: ...` with the best
program finished before it, or the unoptimized one.

    LITELLM_LOCAL_MODEL_COST_MAP=True bench/.venv-dspy/bin/python bench/dspy_side.py \
        --task sentiment --data DIR --seed 0 --adapter chat --optimizers bfsrs,mipro --budgets 200
Prints ONE JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import dspy  # noqa: E402
from dspy.adapters.base import Adapter  # noqa: E402

from nodes.calculator import calculator  # noqa: E402
from studio.evaluate.metrics import exact, json_match  # noqa: E402
from studio.models import local  # noqa: E402
from studio.models.base import Message, Request  # noqa: E402

TASKS: dict[str, dict[str, Any]] = {
    "sentiment": {
        "input": "text",
        "output": "label",
        "instructions": "Is this review positive or negative?",
        "desc": "one of: positive, negative",
        "max_tokens": 8,
        "stop": ["\n"],
    },
    "topic": {
        "input": "text",
        "output": "label",
        "instructions": "What is this news item about?",
        "desc": "one of: sports, business, science, politics",
        "max_tokens": 8,
        "stop": ["\n"],
    },
    "arithmetic": {
        "input": "question",
        "output": "answer",
        "instructions": "",
        "desc": "the number",
        "max_tokens": 12,
        "stop": [],
    },
    "extraction": {
        "input": "text",
        "output": "json",  # the data's column `fields` would shadow `Signature.fields`
        "column": "fields",
        "instructions": 'Extract the person\'s name, age and city as JSON with the keys "name", "age" and "city".',
        "desc": "",
        "prefix": "JSON:",
        "max_tokens": 40,
        "stop": ["\n\n"],
    },
}
"""Per task: the flow's input and output names (and the data column, where it differs), instructions,
max_tokens and stop."""
PIPELINES: dict[str, dict[str, Any]] = {
    "ticket": {
        "input": "text",
        "output": "label",
        "max_tokens": 24,
        "stop": ["\n"],
        "modules": [
            {"inputs": {"text": "Ticket:"}, "output": ("words", "The customer's words:", "")},
            {
                "inputs": {"words": "Text:"},
                "output": ("label", "Label:", "one of: positive, negative"),
                "instructions": "Is this customer's message positive or negative?",
            },
        ],
    },
    "order": {
        "input": "text",
        "output": "total",
        "max_tokens": 6,
        "stop": ["\n"],
        "modules": [
            {"inputs": {"text": "Order:"}, "output": ("quantity", "How many items:", "")},
            {"inputs": {"text": "Order:"}, "output": ("price", "Price of one item in dollars:", "")},
        ],
    },
}
"""The multi-node tasks: per module its inputs and output (name, prefix = the flow's prompt cue,
description) and instructions (the classify node's; the others have none, so DSPy's default
sentence); max_tokens and stop are the larger node's (both stop at a new line)."""
TASKS.update(PIPELINES)
CHAT_EXTRA_TOKENS = 24
PROPOSER_MAX_TOKENS = 256


class BudgetSpent(BaseException):
    """The search used its call budget; raised on the call past it."""


class Meter:
    """Calls made at the model, per phase; the search phase has a hard cap."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.phase = "search"
        self.calls: dict[str, int] = {"search": 0, "test": 0}
        self.errors = 0

    def take(self) -> None:
        if self.phase == "search" and self.calls["search"] >= self.cap:
            raise BudgetSpent()
        self.calls[self.phase] += 1


METER = Meter(cap=0)
"""Module-wide, so that the LM copies DSPy makes (`lm.copy(...)`) share one count."""


class EmbeddedLM(dspy.BaseLM):
    """`local/smollm2` through `studio.models.local`; counts every call in METER."""

    def __init__(self, max_tokens: int, stop: list[str] | None = None) -> None:
        super().__init__(model="local/smollm2", model_type="chat", temperature=0.0, max_tokens=max_tokens, cache=False)
        self.stop = list(stop or [])

    def forward(self, prompt: str | None = None, messages: list[dict[str, Any]] | None = None, **kwargs: Any) -> Any:
        options = {**self.kwargs, **kwargs}
        text_prompt = options.pop("raw_prompt", None)
        if text_prompt is None and messages is None and prompt is not None:
            messages = [{"role": "user", "content": prompt}]
        request = Request(
            messages=tuple(Message(m["role"], _text(m["content"])) for m in messages or ()),
            prompt=text_prompt,
            temperature=float(options.get("temperature") or 0.0),
            max_tokens=int(options.get("max_tokens") or 256),
            stop=tuple(options.get("stop") or self.stop),
        )
        METER.take()
        try:
            completion = local._complete_sync(request)
        except local.ModelError as exc:  # e.g. a proposer prompt longer than the context
            METER.errors += 1
            raise RuntimeError(str(exc)) from exc
        return {
            "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": completion.text}}],
            "usage": {
                "prompt_tokens": completion.input_tokens,
                "completion_tokens": completion.output_tokens,
                "total_tokens": completion.input_tokens + completion.output_tokens,
            },
        }


def _text(content: Any) -> str:
    """A message's content as plain text (DSPy may send a list of text parts)."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


class TemplateAdapter(Adapter):
    """A plain completion prompt: `Field: value` lines, demos first; the reply's first line is the answer."""

    def __init__(self, max_tokens: int, stop: list[str]) -> None:
        super().__init__()
        self.max_tokens = max_tokens
        self.stop = stop

    @staticmethod
    def label(signature: Any, name: str) -> str:
        """A field's name in the prompt: its DSPy prefix (`Text`, `Label`, or one given), else the name."""
        prefix = (signature.fields[name].json_schema_extra or {}).get("prefix", "")
        return prefix.rstrip(":").strip() or name.replace("_", " ").capitalize()

    def render(self, signature: Any, demos: list[dict[str, Any]], inputs: dict[str, Any]) -> str:
        outputs = list(signature.output_fields)
        preamble = [signature.instructions.strip()] if signature.instructions.strip() else []
        for name, field in signature.output_fields.items():  # the output's description, e.g. its labels
            desc = (field.json_schema_extra or {}).get("desc", "")
            if desc and not desc.startswith("${"):
                preamble.append(f"{self.label(signature, name)}: {desc}.")
        parts = ["\n".join(preamble)] if preamble else []
        for demo in demos:
            if not all(name in demo for name in (*signature.input_fields, *outputs)):
                continue
            lines = [f"{self.label(signature, name)}: {demo[name]}" for name in (*signature.input_fields, *outputs)]
            parts.append("\n".join(lines))
        lines = [f"{self.label(signature, name)}: {inputs.get(name, '')}" for name in signature.input_fields]
        parts.append("\n".join([*lines, f"{self.label(signature, outputs[0])}:"]))
        return "\n\n".join(parts)

    def format(self, signature: Any, demos: list[dict[str, Any]], inputs: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": self.render(signature, demos, inputs)}]

    def parse(self, signature: Any, completion: str) -> dict[str, Any]:
        """The reply (already cut by the flow's stop sequence) up to the next `Field:` line is the first
        output; later outputs are read from their `Field: value` lines."""
        outputs = list(signature.output_fields)
        values: dict[str, Any] = {name: "" for name in outputs}
        first: list[str] = []
        current: str | None = outputs[0]
        for line in completion.strip().split("\n"):
            named = [name for name in outputs[1:] if line.startswith(f"{self.label(signature, name)}:")]
            if named:
                current = named[0]
                values[current] = line.split(":", 1)[1].strip()
            elif current == outputs[0]:
                first.append(line)
        values[outputs[0]] = "\n".join(first).strip()
        return values

    def __call__(  # type: ignore[override]
        self, lm: Any, lm_kwargs: dict[str, Any], signature: Any, demos: list[dict[str, Any]], inputs: dict[str, Any]
    ) -> list[dict[str, Any]]:
        text = self.render(signature, demos, inputs)
        options = {**lm_kwargs, "max_tokens": self.max_tokens, "stop": self.stop, "raw_prompt": text}
        replies = lm(messages=[{"role": "user", "content": text}], **options)
        return [self.parse(signature, r if isinstance(r, str) else r.get("text") or "") for r in replies]


class Program(dspy.Module):
    """The flow as a DSPy program: one Predict, run under this program's adapter."""

    def __init__(self, task: str, adapter: Any) -> None:
        super().__init__()
        spec = TASKS[task]
        self.task = task
        self.adapter = adapter
        signature = dspy.Signature(
            {
                spec["input"]: dspy.InputField(),
                spec["output"]: dspy.OutputField(
                    **({"desc": spec["desc"]} if spec["desc"] else {}),
                    **({"prefix": spec["prefix"]} if "prefix" in spec else {}),
                ),
            },
            spec["instructions"] or None,  # arithmetic's flow has none: DSPy's default sentence
        )
        self.predict = dspy.Predict(signature)

    def forward(self, **inputs: Any) -> Any:
        with dspy.context(adapter=self.adapter):
            prediction = self.predict(**inputs)
        if self.task == "arithmetic":  # the flow's text.template node: last word of the first line
            text = str(prediction.answer or "")
            prediction.answer = ((text.strip().split("\n") or [""])[0].split() or [""])[-1]
        return prediction


def _signature(module: dict[str, Any]) -> Any:
    name, prefix, desc = module["output"]
    fields = {field: dspy.InputField(prefix=cue) for field, cue in module["inputs"].items()}
    fields[name] = dspy.OutputField(prefix=prefix, **({"desc": desc} if desc else {}))
    return dspy.Signature(fields, module.get("instructions"))


class Pipeline(dspy.Module):
    """A multi-node flow as a two-module DSPy program, run under this program's adapter."""

    def __init__(self, task: str, adapter: Any) -> None:
        super().__init__()
        first, second = PIPELINES[task]["modules"]
        self.task = task
        self.adapter = adapter
        self.first = dspy.Predict(_signature(first))
        self.second = dspy.Predict(_signature(second))

    def forward(self, text: str) -> Any:
        with dspy.context(adapter=self.adapter):
            if self.task == "ticket":
                words = str(self.first(text=text).words or "")
                return dspy.Prediction(words=words, label=self.second(words=words).label)
            quantity = str(self.first(text=text).quantity or "")
            price = str(self.second(text=text).price or "")
        try:  # the flow's text.template and tool.python nodes
            total = str(calculator(f"{quantity} * {price}"))
        except ValueError:
            total = ""
        return dspy.Prediction(quantity=quantity, price=price, total=total)


def build(task: str, adapter: Any) -> Any:
    """The DSPy program for `task`: one Predict, or two modules for the multi-node tasks."""
    return Pipeline(task, adapter) if task in PIPELINES else Program(task, adapter)


def make_metric(task: str) -> Any:
    output = TASKS[task]["output"]
    compare = json_match if task == "extraction" else exact

    def metric(example: Any, prediction: Any, trace: Any = None) -> float | bool:
        score = compare(example[output], getattr(prediction, output, None))
        return score >= 1.0 if trace is not None else score

    return metric


def load(path: Path, task: str) -> list[Any]:
    spec = TASKS[task]
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if "column" in spec:
        rows = [
            {**{k: v for k, v in row.items() if k != spec["column"]}, spec["output"]: row[spec["column"]]}
            for row in rows
        ]
    return [dspy.Example(**row).with_inputs(spec["input"]) for row in rows]


class Tracker:
    """Full-dev evaluations during the search: the curve and the best program so far."""

    def __init__(self, dev_size: int) -> None:
        self.dev_size = dev_size
        self.curve: list[tuple[int, float]] = []
        self.best: list[tuple[int, float, Any]] = []
        """(calls when finished, dev score, program) each time the best improved."""

    def note(self, program: Any, devset: list[Any], score: float) -> None:
        if METER.phase != "search" or len(devset) != self.dev_size:
            return
        calls = METER.calls["search"]
        if not self.best or score > self.best[-1][1]:
            self.best.append((calls, score, program.deepcopy()))
            self.curve.append((calls, round(score, 4)))

    def best_within(self, budget: int) -> tuple[float | None, Any]:
        found = [(score, program) for calls, score, program in self.best if calls <= budget]
        return found[-1] if found else (None, None)


TRACKER: Tracker | None = None
_evaluate = dspy.Evaluate.__call__


def _tracked_evaluate(self: Any, program: Any, metric: Any = None, devset: Any = None, **kwargs: Any) -> Any:
    result = _evaluate(self, program, metric=metric, devset=devset, **kwargs)
    if TRACKER is not None:
        TRACKER.note(program, devset if devset is not None else self.devset, result.score / 100)
    return result


dspy.Evaluate.__call__ = _tracked_evaluate  # type: ignore[method-assign]


def test_score(program: Any, testset: list[Any], metric: Any) -> tuple[float, int]:
    """Mean test score, and the calls it took (counted apart from the search)."""
    METER.phase, before = "test", METER.calls["test"]
    try:
        evaluate = dspy.Evaluate(devset=testset, metric=metric, num_threads=1, display_progress=False)
        score = evaluate(program).score / 100
    finally:
        METER.phase = "search"
    return round(score, 4), METER.calls["test"] - before


def optimize(name: str, program: Any, train: list[Any], dev: list[Any], metric: Any, seed: int, proposer: Any) -> Any:
    """Compile with one optimizer; BudgetSpent propagates."""
    if name == "bfsrs":
        optimizer = dspy.BootstrapFewShotWithRandomSearch(metric=metric, num_threads=1, max_errors=10**6)
        return optimizer.compile(program, trainset=train, valset=dev)
    optimizer = dspy.MIPROv2(
        metric=metric, prompt_model=proposer, auto="light", num_threads=1, max_errors=10**6, seed=seed or 9
    )
    return optimizer.compile(program, trainset=train, valset=dev, minibatch_size=min(35, len(dev)))


def run_one(name: str, args: argparse.Namespace, data: dict[str, list[Any]], adapter: Any) -> dict[str, Any]:
    global TRACKER
    metric = make_metric(args.task)
    budgets = sorted(int(b) for b in args.budgets.split(","))
    METER.cap, METER.calls["search"], METER.errors = budgets[-1], 0, 0
    TRACKER = Tracker(len(data["dev"]))
    proposer = EmbeddedLM(max_tokens=PROPOSER_MAX_TOKENS)
    start = time.perf_counter()
    stopped = "done"
    returned = None
    try:
        returned = optimize(name, build(args.task, adapter), data["train"], data["dev"], metric, args.seed, proposer)
    except BudgetSpent:
        stopped = "budget"
    except Exception as exc:  # e.g. MIPROv2's proposer: an AdapterParseError on a reply it cannot read
        stopped = f"error: {type(exc).__name__}: {str(exc)[:200]}"
    search_calls, search_seconds = METER.calls["search"], time.perf_counter() - start
    tracker, TRACKER = TRACKER, None
    points = []
    scored: dict[int, tuple[float, int]] = {}
    for budget in budgets:
        dev_score, program = tracker.best_within(budget)
        if stopped == "done" and search_calls <= budget and returned is not None:
            program = returned
        if program is None:
            program = build(args.task, adapter)
        if id(program) not in scored:
            scored[id(program)] = test_score(program, data["test"], metric)
        test, test_calls = scored[id(program)]
        predictors = program.predictors()
        demos = sum(len(p.demos) for p in predictors)
        points.append(
            {
                "budget": budget,
                "optimized_test": test,
                "optimized_dev": dev_score,
                "calls": min(search_calls, budget),
                "test_calls": test_calls,
                "demos": demos,
                "instructions": " | ".join(p.signature.instructions for p in predictors),
                "demos_per_module": [len(p.demos) for p in predictors],
            }
        )
    return {
        "optimizer": name,
        "stopped": stopped,
        "search_calls": search_calls,
        "model_errors": METER.errors,
        "curve": tracker.curve,
        "points": points,
        "seconds": round(time.perf_counter() - start, 1),
        "search_seconds": round(search_seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", required=True, choices=sorted(TASKS))
    parser.add_argument("--data", required=True, help="Folder with TASK-train/dev/test.jsonl.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--adapter", choices=["chat", "template"], default="chat")
    parser.add_argument("--optimizers", default="bfsrs,mipro")
    parser.add_argument("--budgets", default="200", help="Search call budgets; the largest is the cap.")
    args = parser.parse_args()
    spec = TASKS[args.task]
    if args.adapter == "chat":
        adapter: Any = dspy.ChatAdapter()
        lm = EmbeddedLM(max_tokens=spec["max_tokens"] + CHAT_EXTRA_TOKENS)
    else:
        adapter = TemplateAdapter(max_tokens=spec["max_tokens"], stop=spec["stop"])
        lm = EmbeddedLM(max_tokens=spec["max_tokens"], stop=spec["stop"])
    # The template adapter is DSPy's adapter for every predictor (MIPROv2's proposer too); with `chat`
    # the proposer uses DSPy's default, the ChatAdapter with its JSON fallback.
    dspy.configure(
        lm=lm,
        num_threads=1,
        max_errors=10**6,
        disable_history=True,
        adapter=adapter if args.adapter == "template" else None,
    )
    stdout, sys.stdout = sys.stdout, sys.stderr  # DSPy's progress bars and prints: keep stdout for the JSON
    folder = Path(args.data)
    data = {split: load(folder / f"{args.task}-{split}.jsonl", args.task) for split in ("train", "dev", "test")}
    zero_shot, zero_calls = test_score(build(args.task, adapter), data["test"], make_metric(args.task))
    runs = [run_one(name, args, data, adapter) for name in args.optimizers.split(",")]
    result = {
        "task": args.task,
        "seed": args.seed,
        "adapter": args.adapter,
        "zero_shot_test": zero_shot,
        "zero_shot_test_calls": zero_calls,
        "runs": runs,
        "versions": {"dspy": dspy.__version__},
    }
    print(json.dumps(result), file=stdout)


if __name__ == "__main__":
    main()
