"""What `flowstudio batch` and `flowstudio experiments` print: tables over stored summaries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from studio.evaluate.options import KIND
from studio.evaluate.summary import cache_text
from studio.flow.names import fold_at_dashes, room
from studio.secrets import escape_controls, mask
from studio.store.base import ExperimentRecord


def experiment_row(record: ExperimentRecord) -> dict[str, Any]:
    """One entry of `flowstudio experiments --json`."""
    summary = record.summary or {}
    return {
        "experiment_id": record.experiment_id,
        "kind": record.kind,
        "flow": record.flow,
        "created_at": record.created_at,
        "status": "unfinished" if record.summary is None else summary.get("status", "finished"),
        "examples": summary.get("examples", record.config.get("examples")),
        "score": summary.get("score"),
        "errors": summary.get("errors"),
        "cost_usd": summary.get("cost_usd"),
    }


def print_experiments(records: list[ExperimentRecord], console: Console | None = None) -> None:
    """Newest first, in 80 columns: `kind` only when they are not all batches, `cost $` only when
    some experiment cost something (a local model's never do), errors out of the examples (`0/40`),
    an optimizer search's score its chosen flow's on dev, the flow's name folded after a dash
    (never inside a word) when the other columns leave it too little room."""
    console = console or Console()
    rows = [_cells(record, experiment_row(record)) for record in records]
    kinds = len({r.kind for r in records}) > 1 or any(r.kind != KIND for r in records)
    paid = any(experiment_row(r)["cost_usd"] for r in records)
    headers = ["experiment", *(["kind"] if kinds else []), "flow", "created", "status", "score", "errors"]
    headers += ["cost $"] if paid else []
    rows = [[cell for name, cell in zip(_ALL_COLUMNS, row, strict=True) if name in headers] for row in rows]
    flow_at = headers.index("flow")
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers) if i != flow_at]
    left = room(min(console.width, 80), widths)
    # the style of `studio.cli.reports.compact_table`, which this layer cannot import (and which
    # cannot move here: `flowstudio run` would then load the whole evaluate package at start-up)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, show_edge=False)
    for name in headers:
        numeric = name in ("score", "errors", "cost $")
        table.add_column(name, justify="right" if numeric else "left", no_wrap=name != "flow", overflow="fold")
    for row in rows:
        row[flow_at] = fold_at_dashes(row[flow_at], left)
        table.add_row(*row)
    console.print(table)


_ALL_COLUMNS = ("experiment", "kind", "flow", "created", "status", "score", "errors", "cost $")


def _cells(record: ExperimentRecord, row: dict[str, Any]) -> list[str]:
    """Every column's text for one experiment, in `_ALL_COLUMNS` order."""
    score = row["score"]
    after = (record.summary or {}).get("after")
    if score is None and isinstance(after, dict) and isinstance(after.get("dev"), (int, float)):
        score = after["dev"]
    return [
        record.experiment_id,
        record.kind,
        record.flow,
        record.created_at[5:16].replace("T", " "),
        "done" if row["status"] == "finished" else str(row["status"]),
        "-" if score is None else f"{score:.3f}",
        "-" if row["errors"] is None else f"{row['errors']}/{row['examples']}",
        "-" if row["cost_usd"] is None else f"{row['cost_usd']:.4f}",
    ]


def print_summary(
    summary: Mapping[str, Any],
    errors: list[str],
    out: str | None,
    console: Console | None = None,
    mismatches: list[str] | None = None,
) -> None:
    """The table `flowstudio batch` ends with, the first mismatches and the first errors, each naming its row."""
    console = console or Console()
    table = Table(show_header=False, title=f"batch {summary.get('experiment_id', '')} · {summary.get('flow', '')}")
    score = summary.get("score")
    if score is not None:
        low, high = summary["score_ci"]
        table.add_row(f"score ({summary['metric']})", f"{score:.3f}  (95% CI {low:.3f}-{high:.3f})")
    else:
        table.add_row("score", "- (no expected column, no metric)")
    table.add_row(
        "examples",
        f"{summary['examples']} ({summary['resumed']} from before)" if summary["resumed"] else str(summary["examples"]),
    )
    table.add_row(
        "errors", f"{summary['errors']} ({summary['failed']} failed runs, {summary['metric_errors']} metric errors)"
    )
    by_kind = summary.get("errors_by_kind") or {}
    if by_kind:
        table.add_row("failed by kind", ", ".join(f"{kind} {count}" for kind, count in by_kind.items()))
    table.add_row("cost $", f"{summary['cost_usd']:.6f} total, {summary['cost_per_example']:.6f} per example")
    cached = cache_text(summary)
    table.add_row("tokens", f"{summary['tokens']} ({cached})" if cached else str(summary["tokens"]))
    table.add_row("latency", f"p50 {summary['latency_p50_s']:.3f} s, p95 {summary['latency_p95_s']:.3f} s per example")
    table.add_row("time", f"{summary['seconds']:.2f} s ({summary['examples_per_s']} examples/s)")
    if "judge" in summary:
        judge = summary["judge"]
        table.add_row("judge", f"{judge['calls']} calls, {judge['tokens']} tokens, ${judge['cost_usd']:.6f}")
    if out:
        table.add_row("results", out)
    console.print(table)
    if summary.get("failed") and summary.get("status") != "stopped":
        console.print(
            f"run the {summary['failed']} failed examples again: "
            f"flowstudio batch --resume {summary.get('experiment_id', '')} --retry-errors",
            markup=False,
            highlight=False,
        )
    if summary.get("status") == "stopped":
        console.print(
            f"stopped: all of the first {summary['examples']} examples failed; "
            f"fix the cause, then: flowstudio batch --resume {summary.get('experiment_id', '')}",
            markup=False,
            highlight=False,
        )
    if mismatches:
        console.print("first mismatches:", highlight=False)
        for line in mismatches:
            console.print(Text("  " + escape_controls(mask(line))))
    for message in errors:
        console.print(Text.assemble(("error:", "red"), " ", escape_controls(mask(message))))
