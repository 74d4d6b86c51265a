"""The optimizer's report: what changed, what it scores and costs before and after, what the search spent.

Written as JSON (for scripts and the studio) and markdown (for people) beside the optimized
flow, with the Pareto plot and the unified diff of the flow file.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any


def diff(before: str, after: str, before_name: str, after_name: str) -> str:
    """The unified diff of two flow texts ('' when they are equal)."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), before_name, after_name
    )
    return "".join(lines)


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _gap(side: dict[str, Any]) -> str:
    if side.get("test") is None:
        return "-"
    return f"{side['dev'] - side['test']:+.3f}"


def markdown(report: dict[str, Any]) -> str:
    """The report for people."""
    before, after = report["before"], report["after"]
    lines = [
        f"# Optimization of `{report['flow']}`",
        "",
        f"Experiment `{report['experiment_id']}` · metric `{report['metric']}` · seed {report['seed']} · "
        f"budget {report['budget']['calls']} calls"
        + (f", ${report['budget']['usd']}" if report["budget"]["usd"] is not None else "")
        + f" · stopped: {report['stopped']}",
        "",
        f"Optimized flow: `{report['flow_out']}` (candidate {after['candidate']}: {after['move']})",
        "",
        *(f"Note: {note}." for note in report.get("notes", ())),
        *([""] if report.get("notes") else []),
        "| | dev | test | dev - test | USD / example | tokens / example | calls / example |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, side in (("before", before), ("after", after)):
        lines.append(
            f"| {name} | {_score(side['dev'])} | {_score(side['test'])} | {_gap(side)} | "
            f"{side['cost_per_example']:.6f} | {side['tokens_per_example']:.1f} | {side['calls_per_example']:.2f} |"
        )
    lines += [
        "",
        f"The search made {report['calls']} model calls ({report['tokens']} tokens, ${report['cost_usd']:.6f}), "
        f"bootstrap, proposals, evaluation and retries included; calls served from the LLM cache are not counted. "
        f"Scoring the test set made {report['report_calls']} more.",
        "",
        "## Pareto front (dev score against cost per example)",
        "",
        *(f"![Pareto front]({Path(p).name})" for p in report["plots"][:1]),
        "",
        "| candidate | dev score | USD / example | tokens / example | change |",
        "|---|---|---|---|---|",
    ]
    moves = {row["candidate"]: "; ".join(row["changes"]) or row["move"] for row in report["candidates"]}
    for point in report["pareto"]:
        lines.append(
            f"| {point['candidate']} | {point['score']:.3f} | {point['cost_per_example']:.6f} | "
            f"{point['tokens_per_example']:.1f} | {moves.get(point['candidate'], '')} |"
        )
    lines += [
        "",
        "## Candidates",
        "",
        "Each round races its candidates on nested dev minibatches (rung 0 first); the best third go on "
        "unless they lose to the best there by more than one example. Equal scores go to the cheaper "
        "per example, then to fewer calls on a typical example (a prompt's one-time calibration, "
        "counted in `calls / example`, is not), then to the earlier move.",
        "",
        "| candidate | parent | round | rung | dev examples | score | held-out train (ties) | calls / example | change |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["candidates"]:
        held_out = f"{row['held_out_score']:.3f} on {row['held_out_examples']}" if row["held_out_examples"] else "-"
        lines.append(
            f"| {row['candidate']} | {row['parent'] or '-'} | {row['round']} | {row['rung']} | {row['examples']} | "
            f"{row['score']:.3f} | {held_out} | {row['calls_per_example']:.2f} | {row['move']} |"
        )
    lines += _accepted(report) + _dropped(report)
    lines += ["", "## Change to the flow", ""]
    lines += (
        ["```diff", report["diff"].rstrip("\n"), "```"] if report["diff"] else ["No change: the input flow is best."]
    )
    return "\n".join(lines) + "\n"


def _accepted(report: dict[str, Any]) -> list[str]:
    rows = report.get("accepted") or []
    lines = ["", "## Accepted changes", ""]
    if report.get("blamed"):
        culprits = ", ".join(f"{node} ({count})" for node, count in report["blamed"].items())
        lines += [f"Blame (counterfactual re-runs of failing bootstrap runs) pointed at: {culprits}.", ""]
    if not rows:
        return [*lines, "None: no candidate beat the input flow by a margin the data resolves."]
    lines += [
        "A change wins on dev only by more than one example's worth; a smaller win is a tie, decided on "
        "held-out train examples. Confidence: one-sided sign test over the examples where the two differ.",
        "",
        "| candidate | beat | decided on | wins | losses | ties | confidence | node | change |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['candidate']} | {row['versus']} | {row['decided_on']} | {row['wins']} | {row['losses']} | "
            f"{row['ties']} | {row['confidence']:.3f} | {row.get('node') or '-'} | {row['move']} |"
        )
    return lines


def _dropped(report: dict[str, Any]) -> list[str]:
    rows = report.get("dropped_proposals") or []
    if not rows:
        return []
    lines = ["", "## Dropped proposals", "", "| node | reason | text |", "|---|---|---|"]
    for row in rows:
        text = row["text"].replace("|", "\\|") or "(empty)"
        lines.append(f"| {row['node']} | {row['reason']} | {text[:120]} |")
    return lines


def write(report: dict[str, Any], stem: str) -> list[Path]:
    """`STEM.json` and `STEM.md`; the paths written."""
    json_path, md_path = Path(f"{stem}.json"), Path(f"{stem}.md")
    json_path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    md_path.write_text(markdown(report), encoding="utf-8")
    return [json_path, md_path]


def show(report: dict[str, Any], console: Any = None) -> None:
    """The end-of-search summary for people (a rich table), with where the files are."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title=f"optimize {report['experiment_id']} · {report['flow']}")
    for column in ("", "dev", "test", "dev - test", "USD / example", "tokens / example", "calls / example"):
        table.add_column(column)
    for name in ("before", "after"):
        side = report[name]
        table.add_row(
            name,
            _score(side["dev"]),
            _score(side["test"]),
            _gap(side),
            f"{side['cost_per_example']:.6f}",
            f"{side['tokens_per_example']:.1f}",
            f"{side['calls_per_example']:.2f}",
        )
    console.print(table)
    tested = report.get("report_calls") or 0
    apart = f"; scoring --test: {tested} calls more, outside the budget" if tested else ""
    console.print(
        f"search: {report['calls']} calls, {report['tokens']} tokens, ${report['cost_usd']:.6f} "
        f"(budget {report['budget']['calls']} calls){apart}; stopped: {report['stopped']}",
        highlight=False,
        soft_wrap=True,
    )
    console.print(f"change: {report['after']['move']}", highlight=False, soft_wrap=True)
    console.print(f"flow: {report['flow_out']}", highlight=False, soft_wrap=True)
    console.print(f"report: {', '.join(report['reports'] + report['plots'])}", highlight=False, soft_wrap=True)
