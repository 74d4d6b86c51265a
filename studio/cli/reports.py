"""What the CLI prints for people (rich tables) and for scripts (JSON rows)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from studio.runtime.engine import RunResult
from studio.secrets import escape_controls, mask
from studio.store.base import CallRecord, RunRecord, StepRecord


def run_row(run: RunRecord) -> dict[str, Any]:
    """One entry of `flowstudio runs --json`."""
    return {
        "run_id": run.run_id,
        "flow": run.flow,
        "status": run.status,
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "tokens": run.tokens,
        "cost_usd": round(run.cost_usd, 10),
    }


def _seconds(start: str, end: str | None) -> str:
    if not end:
        return "-"
    delta = dt.datetime.fromisoformat(end) - dt.datetime.fromisoformat(start)
    return f"{delta.total_seconds():.2f}"


def _short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(_safe(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _safe(value: Any) -> str:
    """Data as text fit for a terminal: `$env` values masked, control characters escaped, no rich markup."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return escape(escape_controls(mask(text)))


def print_run(result: RunResult, console: Console | None = None) -> None:
    """Outputs, then a per-node summary: status, tokens, seconds."""
    console = console or Console()
    console.print(f"run [bold]{result.run_id}[/] [bold]{result.status}[/]")
    if result.error:
        console.print(f"[red]error:[/] {_safe(result.error)}", markup=True, highlight=False)
    for name, value in (result.outputs or {}).items():
        console.print(f"[bold]{_safe(name)}[/]: ", end="")
        console.print(
            escape_controls(mask(value if isinstance(value, str) else json.dumps(value))), markup=False, highlight=False
        )
    table = Table("node", "status", "attempt", "tokens", "cost $", "seconds", title="steps")
    for step in result.steps:
        table.add_row(
            _safe(step.node),
            step.status,
            str(step.attempt),
            str(step.tokens),
            f"{step.cost_usd:.6f}",
            f"{step.seconds:.3f}",
        )
    table.add_row("[bold]total[/]", "", "", str(result.tokens), f"{result.cost_usd:.6f}", "")
    console.print(table)


def print_runs(runs: list[RunRecord], console: Console | None = None) -> None:
    table = Table("run", "flow", "status", "started", "seconds", "steps", "tokens", "cost $")
    for run in runs:
        table.add_row(
            run.run_id, _safe(run.flow), run.status, run.started_at[:19], _seconds(run.started_at, run.ended_at),
            str(run.steps), str(run.tokens), f"{run.cost_usd:.6f}",
        )  # fmt: skip
    (console or Console()).print(table)


def print_trace(
    run: RunRecord, steps: list[StepRecord], calls: list[CallRecord], console: Console | None = None
) -> None:
    """The per-node table of one run, with errors spelled out."""
    console = console or Console()
    console.print(
        f"run [bold]{run.run_id}[/] of {_safe(run.flow)}: [bold]{run.status}[/]  tokens {run.tokens}  cost ${run.cost_usd:.6f}"
    )
    table = Table("node", "status", "att", "tokens", "cost $", "seconds", "inputs", "outputs / error")
    for step in steps:
        result = _safe(step.error) if step.error else _short(step.outputs)
        table.add_row(
            _safe(step.node), step.status, str(step.attempt), str(step.tokens), f"{step.cost_usd:.6f}",
            _seconds(step.started_at, step.ended_at), _short(step.inputs, 40), result,
        )  # fmt: skip
    console.print(table)
    console.print(f"{len(calls)} model call(s)")
