"""The optimizer on the generated tasks with the embedded model: zero-shot against optimized test score.

For each task and seed: generate train/dev/test (disjoint vocabulary pools, `studio.evaluate.tasks`),
optimize `bench/flows/TASK.yaml` on local/smollm2 within a budget of model calls, and score
the input flow and the optimized one on the held-out test set. Prints ONE JSON object: per
run the scores before and after, the calls the search made (counted at the model client),
the calls the test scoring made, the chosen change, seconds, and the best dev score against
calls spent (the search's curve); then the means per task.

The extraction flow names its input `text`, which `llm.generate` demos cannot tell apart from
the answer (they keep the answer under `text`), so the bench renames that template variable
to `sentence`; the rendered prompt is the same text, the zero-shot score unchanged.

The embedded model uses one thread per CPU it may run on; on a busy machine two threads
spin-wait for each other (8 s a call instead of 0.4 s was measured), so by default the bench
pins itself to one CPU (`--cpus`).

Run (from the repository root):
    .venv/bin/python bench/optimize_tasks.py
    .venv/bin/python bench/optimize_tasks.py --tasks topic --seeds 0 --budget 150 --markdown
    .venv/bin/python bench/optimize_tasks.py --tasks ticket,order --seeds 0   # the multi-node tasks
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from nodes.llm_classify import PRIORS  # noqa: E402
from studio.evaluate.tasks import write  # noqa: E402
from studio.optimize import OptimizeOptions, optimize, prepare  # noqa: E402
from studio.store import MemoryStore  # noqa: E402

METRICS = {
    "sentiment": "exact",
    "topic": "exact",
    "arithmetic": "exact",
    "extraction": "json_match",
    "ticket": "exact",
    "order": "exact",
}
RENAMED = {"extraction": ("text", "sentence")}
"""Template variables renamed so that demos can hold the answer under `text` (see above)."""


def flow_file(task: str, folder: Path) -> Path:
    """The bench flow for `task`, copied with its input variable renamed where demos need it."""
    source = ROOT / "bench" / "flows" / f"{task}.yaml"
    if task not in RENAMED:
        return source
    old, new = RENAMED[task]
    text = source.read_text(encoding="utf-8")
    text = text.replace(f"inputs: {{{old}: $inputs.{old}}}", f"inputs: {{{new}: $inputs.{old}}}")
    text = text.replace(f"{{{{ {old} }}}}", f"{{{{ {new} }}}}")
    target = folder / f"{task}.yaml"
    target.write_text(text, encoding="utf-8")
    return target


async def one(task: str, seed: int, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """Optimize one task at one seed; the figures of that run. The classify calibration priors an
    earlier search asked are forgotten first, so no seed saves calls that a run alone would spend
    (the model's prompt cache can still move a logprob slightly: see docs/benchmarks.md)."""
    PRIORS.clear()
    files = write(task, folder, sizes=args.sizes, seed=seed)
    options = OptimizeOptions(
        flow=str(flow_file(task, folder)),
        train=str(files["train"]),
        dev=str(files["dev"]),
        test=str(files["test"]),
        metric=METRICS[task],
        budget_calls=args.budget,
        seed=seed,
        out=str(folder / f"{task}.optimized.yaml"),
        minibatch=args.minibatch,
        width=args.width,
        proposer=args.proposer,
        concurrency=1,
    )
    curve: list[tuple[int, float]] = []

    def progress(*, event: str, best: float | None, calls: int = 0, **_: Any) -> None:
        if event == "best" and best is not None:
            curve.append((calls, round(best, 4)))

    start = time.perf_counter()
    result = await optimize(prepare(options), MemoryStore(), progress=progress)
    report = result.report
    return {
        "task": task,
        "seed": seed,
        "zero_shot_test": report["before"]["test"],
        "optimized_test": report["after"]["test"],
        "zero_shot_dev": report["before"]["dev"],
        "optimized_dev": report["after"]["dev"],
        "calls": report["calls"],
        "test_calls": report["report_calls"],
        "change": report["after"]["move"],
        "stopped": report["stopped"],
        "curve": curve,
        "seconds": round(time.perf_counter() - start, 1),
    }


def summarise(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Means per task over the seeds."""
    means: dict[str, dict[str, float]] = {}
    for task in dict.fromkeys(r["task"] for r in runs):
        mine = [r for r in runs if r["task"] == task]
        means[task] = {
            key: round(statistics.mean(r[key] for r in mine), 4)
            for key in ("zero_shot_test", "optimized_test", "calls", "seconds")
        }
    return means


def markdown(runs: list[dict[str, Any]], means: dict[str, dict[str, float]]) -> str:
    lines = [
        "| task | seed | zero-shot test | optimized test | calls (search) | calls (test scoring) | change | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        lines.append(
            f"| {r['task']} | {r['seed']} | {r['zero_shot_test']:.3f} | {r['optimized_test']:.3f} | {r['calls']} | "
            f"{r['test_calls']} | {r['change']} | {r['seconds']} |"
        )
    for task, m in means.items():
        lines.append(
            f"| **{task}** | mean | **{m['zero_shot_test']:.3f}** | **{m['optimized_test']:.3f}** | {m['calls']:.0f} | "
            f"| | {m['seconds']:.0f} |"
        )
    return "\n".join(lines)


def pin(cpus: int) -> None:
    """Run on `cpus` CPUs only (before the model loads: it starts one thread per CPU it may use)."""
    if cpus > 0 and hasattr(os, "sched_setaffinity"):
        allowed = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, set(allowed[-cpus:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default="sentiment,topic,arithmetic,extraction")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--budget", type=int, default=200, help="Model calls per search.")
    parser.add_argument("--sizes", default="24,30,40", help="train,dev,test examples.")
    parser.add_argument("--minibatch", type=int, default=8)
    parser.add_argument("--width", type=int, default=10)
    parser.add_argument("--proposer", default=None, help="Proposer alias (default: the flow's default; none).")
    parser.add_argument("--cpus", type=int, default=1, help="CPUs to pin to (0: do not pin).")
    parser.add_argument("--markdown", action="store_true", help="Also print the table for docs/benchmarks.md.")
    args = parser.parse_args()
    args.sizes = tuple(int(s) for s in args.sizes.split(","))
    pin(args.cpus)
    runs = []
    started = time.perf_counter()
    for task in args.tasks.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            with tempfile.TemporaryDirectory() as folder:
                runs.append(asyncio.run(one(task, seed, args, Path(folder))))
            print(json.dumps(runs[-1]), file=sys.stderr)
    means = summarise(runs)
    settings = {k: v for k, v in vars(args).items() if k != "markdown"}
    print(
        json.dumps(
            {"settings": settings, "runs": runs, "means": means, "seconds": round(time.perf_counter() - started)}
        )
    )
    if args.markdown:
        print(markdown(runs, means))


if __name__ == "__main__":
    main()
