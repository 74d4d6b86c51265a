"""How many demos a classify node needs: dev, held-out train and test scores of the bench flow with
0, 2, 4 and 8 labelled demos (several random draws each, spread evenly over the labels).

This is the measurement behind the optimizer's rule that a classify node first tries one demo per
label: on the generated topic task (4 labels) two demos vary widely from draw to draw, four (one
per label) do not. "held" is the train rows none of whose inputs a demo shows. Prints one JSON line
per flow variant.

Run (from the repository root):
    .venv/bin/python bench/demo_counts.py --task topic --seeds 0,1,10,11
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.optimize_tasks import pin  # noqa: E402
from studio.evaluate.datasets import Example  # noqa: E402
from studio.evaluate.metrics import resolve_metric  # noqa: E402
from studio.evaluate.tasks import write  # noqa: E402
from studio.optimize import OptimizeOptions, prepare  # noqa: E402
from studio.optimize.candidates import Candidate, build, tunable_nodes  # noqa: E402
from studio.optimize.candidates import Path as EditPath  # noqa: E402
from studio.optimize.demos import labelled, pick, unseen  # noqa: E402
from studio.optimize.evaluator import Evaluator  # noqa: E402
from studio.optimize.meter import Meter, metering  # noqa: E402
from studio.store import MemoryStore  # noqa: E402


async def scores(evaluator: Evaluator, candidate: Candidate, sets: dict[str, list[Example]]) -> dict[str, float]:
    """Mean metric per named example set."""
    assert candidate.plan is not None
    means = {}
    for name, examples in sets.items():
        done = await evaluator.run(candidate.plan, examples)
        means[name] = round(sum(d.score for d in done) / len(done), 3)
    return means


async def one_seed(task: str, seed: int, counts: list[int], draws: int, folder: Path) -> None:
    """Score the flow with `draws` random demo sets of each count on one seed's data; print each."""
    files = write(task, folder, sizes=(24, 30, 40), seed=seed)
    flow = ROOT / "bench" / "flows" / f"{task}.yaml"
    options = OptimizeOptions(
        flow=str(flow), train=str(files["train"]), dev=str(files["dev"]), test=str(files["test"]),
        metric="exact", budget_calls=10_000, seed=seed, out=str(folder / "out.yaml"), concurrency=1,
    )  # fmt: skip
    p = prepare(options)
    assert p.test is not None
    node = tunable_nodes(p.flow)[0]
    pool = labelled(p.flow, node, p.train)
    rng = random.Random(seed)
    with metering(Meter()) as meter:
        metric = resolve_metric("exact", expect=p.dev.expect, plan=p.plan, judge=None, rubric=None)
        evaluator = Evaluator(MemoryStore(), metric, meter, experiment_id="demo-counts", models={}, concurrency=1)
        for count in counts:
            for draw in range(draws if count else 1):
                demos = pick(list(pool), count, rng, node.port) if count else []
                edits: dict[EditPath, Any] = {("nodes", node.id, "config", "demos"): demos} if count else {}
                candidate = build(Candidate("c", edits, f"{count} demos"), p.flow, {})
                sets = {"dev": p.dev.examples, "held": unseen(p.train, candidate.shown()), "test": p.test.examples}
                row = {
                    "task": task,
                    "seed": seed,
                    "demos": count,
                    "draw": draw,
                    **await scores(evaluator, candidate, sets),
                }
                print(json.dumps(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="topic", choices=("sentiment", "topic"))
    parser.add_argument("--seeds", default="0,1,10,11")
    parser.add_argument("--counts", default="0,2,4,8")
    parser.add_argument("--draws", type=int, default=4, help="Random demo sets per count.")
    parser.add_argument("--cpus", type=int, default=1, help="CPUs to pin to (0: do not pin).")
    args = parser.parse_args()
    pin(args.cpus)
    counts = [int(c) for c in args.counts.split(",")]
    for seed in (int(s) for s in args.seeds.split(",")):
        with tempfile.TemporaryDirectory() as folder:
            asyncio.run(one_seed(args.task, seed, counts, args.draws, Path(folder)))


if __name__ == "__main__":
    main()
