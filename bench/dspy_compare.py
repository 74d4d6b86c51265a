"""Our optimizer against DSPy's, side by side in one run, on the same data, model and call budget.

For each task and seed the generated train/dev/test files (`studio.evaluate.tasks`, as in
bench/optimize_tasks.py) are written once; our optimizer (`optimize_tasks.one`) and DSPy
(bench/dspy_side.py in bench/.venv-dspy: BootstrapFewShotWithRandomSearch and MIPROv2
auto="light", each with DSPy's ChatAdapter and with a plain-template adapter; a two-module program
for the multi-node tasks `ticket` and `order`) then run on those
files with the embedded model `local/smollm2` and the same budget of model calls, counted at the
model; test scoring is counted apart. DSPy's search is stopped by a hard cap at the budget (see
bench/dspy_side.py); with `--budgets 200,400` DSPy's result at each budget comes from one run
(its trajectory does not depend on the cap) and ours is run once per budget (it sizes its search
to the budget).

Prints ONE JSON object (runs, means per task and system, the goal check); with `--markdown` also
the table and the curves for docs/benchmarks.md; writes one SVG per task of best dev score against
search calls (`--svg-dir`, default docs/img/optimizer-vs-dspy-TASK.svg).

Run (from the repository root):
    bash bench/setup_dspy.sh     # once: DSPy in its own venv
    .venv/bin/python bench/dspy_compare.py --markdown
    .venv/bin/python bench/dspy_compare.py --tasks sentiment --seeds 0 --budget 60
    .venv/bin/python bench/dspy_compare.py --tasks ticket,order --seeds 0 --markdown   # two-module programs
    .venv/bin/python bench/dspy_compare.py --adapters '' --partial ours.jsonl     # our side only
    .venv/bin/python bench/dspy_compare.py --merge a.jsonl b.jsonl --markdown   # report on --partial files
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from html import escape
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.optimize_tasks import one, pin  # noqa: E402
from studio.evaluate.tasks import write  # noqa: E402

DSPY_PYTHON = ROOT / "bench" / ".venv-dspy" / "bin" / "python"
ADAPTERS = ("chat", "template")
OPTIMIZERS = ("bfsrs", "mipro")
SYSTEMS = ("ours", "bfsrs+chat", "bfsrs+template", "mipro+chat", "mipro+template")
LABELS = {
    "ours": "ours",
    "bfsrs+chat": "BFSRS + ChatAdapter",
    "bfsrs+template": "BFSRS + template",
    "mipro+chat": "MIPROv2-light + ChatAdapter",
    "mipro+template": "MIPROv2-light + template",
}
COLOURS = {
    "ours": "#d62728",
    "bfsrs+chat": "#1f77b4",
    "bfsrs+template": "#17becf",
    "mipro+chat": "#2ca02c",
    "mipro+template": "#bcbd22",
}
GOAL_POINTS = 0.05
STOPPED = {"done": "", "budge": ", stopped by the cap", "error": ", optimizer raised"}


def ours(task: str, seed: int, budget: int, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """Our optimizer on the files in `folder` (optimize_tasks.one rewrites the same files)."""
    options = argparse.Namespace(
        sizes=args.sizes, budget=budget, minibatch=args.minibatch, width=args.width, proposer=None
    )
    run = asyncio.run(one(task, seed, options, folder))
    return {
        "task": task,
        "seed": seed,
        "system": "ours",
        "budget": budget,
        "zero_shot_test": run["zero_shot_test"],
        "optimized_test": run["optimized_test"],
        "optimized_dev": run["optimized_dev"],
        "calls": run["calls"],
        "test_calls": run["test_calls"],
        "change": run["change"],
        "curve": run["curve"],
        "seconds": run["seconds"],
    }


def dspy_side(task: str, seed: int, adapter: str, budgets: list[int], folder: Path) -> list[dict[str, Any]]:
    """Both DSPy optimizers with one adapter, as rows per optimizer and budget."""
    command = [
        str(DSPY_PYTHON),
        str(ROOT / "bench" / "dspy_side.py"),
        *("--task", task, "--data", str(folder), "--seed", str(seed), "--adapter", adapter),
        *("--optimizers", ",".join(OPTIMIZERS), "--budgets", ",".join(map(str, budgets))),
    ]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "TQDM_DISABLE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"dspy_side.py failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    rows = []
    for run in result["runs"]:
        for point in run["points"]:
            rows.append(
                {
                    "task": task,
                    "seed": seed,
                    "system": f"{run['optimizer']}+{adapter}",
                    "budget": point["budget"],
                    "zero_shot_test": result["zero_shot_test"],
                    "optimized_test": point["optimized_test"],
                    "optimized_dev": point["optimized_dev"],
                    "calls": point["calls"],
                    "test_calls": point["test_calls"],
                    "change": f"{point['demos']} demos" + STOPPED.get(run["stopped"][:5], ", " + run["stopped"]),
                    "stopped": run["stopped"],
                    "instructions": point["instructions"],
                    "curve": [c for c in run["curve"] if c[0] <= point["budget"]],
                    "search_calls_uncapped": run["search_calls"] if run["stopped"] == "done" else None,
                    "model_errors": run["model_errors"],
                    "seconds": run["seconds"],
                }
            )
    return rows


def means(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Means over the seeds per task, system and budget."""
    out = []
    keys = dict.fromkeys((r["task"], r["system"], r["budget"]) for r in rows)
    for task, system, budget in keys:
        mine = [r for r in rows if (r["task"], r["system"], r["budget"]) == (task, system, budget)]
        out.append(
            {
                "task": task,
                "system": system,
                "budget": budget,
                "seeds": len(mine),
                **{
                    key: round(statistics.mean(r[key] for r in mine), 4)
                    for key in ("zero_shot_test", "optimized_test", "calls")
                },
                "optimized_dev": _mean_known([r.get("optimized_dev") for r in mine]),
            }
        )
    return out


def _mean_known(values: list[float | None]) -> float | None:
    """The mean where every seed has a value (DSPy's has none when no full-dev evaluation finished)."""
    if not values or any(v is None for v in values):
        return None
    return round(statistics.mean(v for v in values if v is not None), 4)


def gap(m: dict[str, Any]) -> float | None:
    """The dev-test gap in points: dev score of the chosen program minus its held-out test score."""
    dev = m.get("optimized_dev")
    return None if dev is None else round(100 * (dev - m["optimized_test"]), 1)


def goal(summary: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per task and budget: ours against DSPy's best mean test score, and the calls each used."""
    verdicts: dict[str, dict[str, Any]] = {}
    for m in summary:
        if m["system"] != "ours":
            continue
        theirs = [x for x in summary if x["task"] == m["task"] and x["budget"] == m["budget"] and x["system"] != "ours"]
        if not theirs:
            continue
        best = max(theirs, key=lambda x: x["optimized_test"])
        margin = round(m["optimized_test"] - best["optimized_test"], 4)
        verdicts[f"{m['task']}@{m['budget']}"] = {
            "ours": m["optimized_test"],
            "dspy_best": best["optimized_test"],
            "dspy_best_system": best["system"],
            "margin_points": round(100 * margin, 1),
            "ours_calls": m["calls"],
            "dspy_best_calls": best["calls"],
            "ours_gap_points": gap(m),
            "dspy_best_gap_points": gap(best),
            "met": margin >= GOAL_POINTS - 1e-9 and m["calls"] <= best["calls"],
        }
    return verdicts


def step_mean(curves: list[list[list[float]]], grid: list[int]) -> list[tuple[int, float]]:
    """The mean over seeds of best-dev-so-far step functions, where every seed has a point."""
    points = []
    for x in grid:
        values = []
        for curve in curves:
            seen = [score for calls, score in curve if calls <= x]
            if seen:
                values.append(seen[-1])
        if curves and len(values) == len(curves):
            points.append((x, statistics.mean(values)))
    return points


def svg(task: str, rows: list[dict[str, Any]], budget: int) -> str:
    """Best dev score against search calls, mean over seeds, one line per system (hand-written SVG)."""
    width, height, left, right, top, bottom = 640, 360, 56, 200, 30, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    grid = list(range(0, budget + 1, max(1, budget // 100)))

    def x(calls: float) -> float:
        return left + plot_w * calls / budget

    def y(score: float) -> float:
        return top + plot_h * (1 - score)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="18" font-size="13">{escape(task)}: best dev score so far against search calls '
        "(mean of seeds)</text>",
    ]
    for tick in range(0, 11, 2):
        value = tick / 10
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(value):.1f}" y2="{y(value):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{y(value) + 4:.1f}" text-anchor="end">{value:.1f}</text>')
    for tick in range(0, budget + 1, max(1, budget // 5)):
        parts.append(f'<text x="{x(tick):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{tick}</text>')
    parts.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#444"/>')
    parts.append(f'<text x="{left + plot_w / 2:.0f}" y="{height - 8}" text-anchor="middle">model calls (search)</text>')
    for i, system in enumerate(SYSTEMS):
        curves = [r["curve"] for r in rows if r["task"] == task and r["system"] == system and r["budget"] == budget]
        points = step_mean(curves, grid)
        colour = COLOURS[system]
        if points:
            path = " ".join(f"{x(c):.1f},{y(s):.1f}" for c, s in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        legend_y = top + 14 + 18 * i
        parts.append(
            f'<line x1="{left + plot_w + 12}" x2="{left + plot_w + 32}" y1="{legend_y}" y2="{legend_y}" '
            f'stroke="{colour}" stroke-width="2"/>'
        )
        parts.append(f'<text x="{left + plot_w + 36}" y="{legend_y + 4}">{escape(LABELS[system])}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def curve_text(rows: list[dict[str, Any]], task: str, budget: int, step: int) -> str:
    """The mean curves of one task as a markdown table: best dev score at every `step` calls."""
    grid = list(range(step, budget + 1, step))
    lines = ["| system | " + " | ".join(str(g) for g in grid) + " |", "|---|" + "---|" * len(grid)]
    for system in SYSTEMS:
        curves = [r["curve"] for r in rows if r["task"] == task and r["system"] == system and r["budget"] == budget]
        if not curves:
            continue
        found = dict(step_mean(curves, grid))
        cells = [f"{found[g]:.3f}" if g in found else "-" for g in grid]
        lines.append(f"| {LABELS[system]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(rows: list[dict[str, Any]], summary: list[dict[str, Any]], verdicts: dict[str, Any]) -> str:
    lines = [
        "| task | seed | system | budget | zero-shot test | optimized test | calls (search) | calls (test) | result |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['seed']} | {LABELS[r['system']]} | {r['budget']} | {r['zero_shot_test']:.3f} | "
            f"{r['optimized_test']:.3f} | {r['calls']} | {r['test_calls']} | {r['change']} |"
        )
    lines += [
        "",
        "| task | system | budget | zero-shot test | optimized test | calls (search) |",
        "|---|---|---|---|---|---|",
    ]
    for m in summary:
        lines.append(
            f"| {m['task']} | {LABELS[m['system']]} | {m['budget']} | {m['zero_shot_test']:.3f} | "
            f"**{m['optimized_test']:.3f}** | {m['calls']:.0f} |"
        )
    lines += [
        "",
        "| task @ budget | ours | DSPy's best | margin (points) | dev-test gap, ours / DSPy's best (points) | goal met |",
        "|---|---|---|---|---|---|",
    ]
    for key, v in verdicts.items():
        gaps = " / ".join("-" if g is None else f"{g:+.1f}" for g in (v["ours_gap_points"], v["dspy_best_gap_points"]))
        lines.append(
            f"| {key} | {v['ours']:.3f} ({v['ours_calls']:.0f} calls) | {v['dspy_best']:.3f} "
            f"({LABELS[v['dspy_best_system']]}, {v['dspy_best_calls']:.0f} calls) | {v['margin_points']:+.1f} | "
            f"{gaps} | {'yes' if v['met'] else 'no'} |"
        )
    budgets = sorted({r["budget"] for r in rows})
    for task in dict.fromkeys(r["task"] for r in rows):
        lines += ["", f"Best dev score so far against search calls, {task} (mean of seeds):", ""]
        lines.append(curve_text(rows, task, budgets[-1], max(10, budgets[-1] // 10)))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default="sentiment,topic,arithmetic,extraction")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--budget", type=int, default=200, help="Model calls per search (ours and DSPy's).")
    parser.add_argument("--budgets", default=None, help="Several budgets, e.g. 200,400 (overrides --budget).")
    parser.add_argument("--ours-budgets", default=None, help="Budgets to run ours at (default: all of them; 0: none).")
    parser.add_argument("--sizes", default="24,30,40", help="train,dev,test examples.")
    parser.add_argument("--minibatch", type=int, default=8)
    parser.add_argument("--width", type=int, default=10)
    parser.add_argument("--adapters", default=",".join(ADAPTERS))
    parser.add_argument("--cpus", type=int, default=1, help="CPUs to pin to, the DSPy side too (0: do not pin).")
    parser.add_argument("--svg-dir", default=str(ROOT / "docs" / "img"), help="Where to write the SVGs ('' for none).")
    parser.add_argument("--markdown", action="store_true", help="Also print the tables for docs/benchmarks.md.")
    parser.add_argument("--partial", default=None, help="Append each finished row to this JSON-lines file too.")
    parser.add_argument(
        "--merge", nargs="+", default=None, help="Run nothing: report on the rows of earlier runs (--partial files)."
    )
    args = parser.parse_args()
    args.sizes = tuple(int(s) for s in args.sizes.split(","))
    budgets = sorted(int(b) for b in (args.budgets or str(args.budget)).split(","))
    ours_budgets = sorted(int(b) for b in (args.ours_budgets or ",".join(map(str, budgets))).split(",") if int(b) > 0)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    if args.merge:
        for path in args.merge:
            rows += [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
        budgets = sorted({r["budget"] for r in rows})
        args.tasks = ",".join(dict.fromkeys(r["task"] for r in rows))
    elif not DSPY_PYTHON.exists():
        sys.exit("bench/.venv-dspy is missing: run `bash bench/setup_dspy.sh` first")
    else:
        pin(args.cpus)
    for task in args.tasks.split(",") if not args.merge else []:
        for seed in (int(s) for s in args.seeds.split(",")):
            with tempfile.TemporaryDirectory() as name:
                folder = Path(name)
                write(task, folder, sizes=args.sizes, seed=seed)
                for budget in ours_budgets:
                    rows.append(ours(task, seed, budget, args, folder))
                    print(json.dumps({k: v for k, v in rows[-1].items() if k != "curve"}), file=sys.stderr)
                for adapter in [a for a in args.adapters.split(",") if a]:
                    rows += dspy_side(task, seed, adapter, budgets, folder)
                    for row in rows[-len(OPTIMIZERS) * len(budgets) :]:
                        print(json.dumps({k: v for k, v in row.items() if k != "curve"}), file=sys.stderr)
                if args.partial:
                    with open(args.partial, "a", encoding="utf-8") as log:
                        log.writelines(json.dumps(r) + "\n" for r in rows if (r["task"], r["seed"]) == (task, seed))
    rows.sort(key=lambda r: (r["task"], r["budget"], r["seed"], SYSTEMS.index(r["system"])))
    summary = means(rows)
    verdicts = goal(summary)
    if args.svg_dir:
        Path(args.svg_dir).mkdir(parents=True, exist_ok=True)
        for task in dict.fromkeys(r["task"] for r in rows):
            (Path(args.svg_dir) / f"optimizer-vs-dspy-{task}.svg").write_text(svg(task, rows, budgets[-1]))
    settings = {k: v for k, v in vars(args).items() if k != "markdown"}
    report = {
        "settings": {**settings, "budgets": budgets, "ours_budgets": ours_budgets},
        "runs": rows,
        "means": summary,
        "goal": verdicts,
        "seconds": round(time.perf_counter() - started),
    }
    print(json.dumps(report))
    if args.markdown:
        print(markdown(rows, summary, verdicts))


if __name__ == "__main__":
    main()
