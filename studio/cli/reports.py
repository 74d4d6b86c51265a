"""What the CLI prints for people (rich tables) and for scripts (JSON rows)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from studio.runtime.engine import RunResult
from studio.secrets import escape_controls, mask
from studio.store.base import CallRecord, RunRecord, StepRecord
from studio.store.teacher import Decision


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
        "version": run.version,
    }


def _seconds(start: str, end: str | None) -> str:
    if not end:
        return "-"
    delta = dt.datetime.fromisoformat(end) - dt.datetime.fromisoformat(start)
    return f"{delta.total_seconds():.2f}"


def _short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(_plain(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _plain(value: Any) -> str:
    """Data as plain text fit for a terminal: `$env` values masked, control characters escaped."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return escape_controls(mask(text))


def _text(value: str) -> Text:
    """Data as a rich Text (never markup), control characters escaped and `$env` values masked."""
    return Text(_plain(value))


def _safe(value: Any) -> str:
    """Data as text fit for a terminal: `$env` values masked, control characters escaped, no rich markup."""
    return escape(_plain(value))


def print_run(result: RunResult, console: Console | None = None) -> None:
    """Outputs, then a per-node summary: status, tokens, seconds."""
    console = console or Console()
    console.print(f"run [bold]{result.run_id}[/] [bold]{result.status}[/]")
    if result.error and result.status != "waiting":
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


VERSION_SHOWN = 8
"""Characters of a run's version id `runs` shows (`runs --version` takes any beginning)."""


def print_runs(runs: list[RunRecord], console: Console | None = None) -> None:
    """Full run ids (any unique prefix of one works in `trace`, `resume`, `rerun`); fits 80 columns,
    and shows each run's version where the terminal has room for it too."""
    from studio.flow.names import fold_at_dashes, room

    console = console or Console()
    versions = console.width >= 80 + VERSION_SHOWN + 2
    table = compact_table()
    table.add_column("run", no_wrap=True, min_width=16)
    table.add_column("flow", overflow="fold", min_width=8, ratio=1)
    headers = ("run", *(("version",) if versions else ()), "status", "started", "secs", "tokens", "cost $")
    for name in headers[1:-3]:
        table.add_column(name, no_wrap=True)
    for name in headers[-3:]:
        table.add_column(name, no_wrap=True, justify="right")
    rows = [
        [run.run_id, *([(run.version or "-")[:VERSION_SHOWN]] if versions else []), run.status,
         run.started_at[5:16].replace("T", " "), _seconds(run.started_at, run.ended_at), str(run.tokens),
         f"{run.cost_usd:.6f}"]
        for run in runs
    ]  # fmt: skip
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers)]
    total = min(console.width, 80 + (VERSION_SHOWN + 2 if versions else 0))
    left = room(total, widths)  # a flow name breaks after a dash, never inside a word
    for run, row in zip(runs, rows, strict=True):
        table.add_row(row[0], Text(fold_at_dashes(_plain(run.flow), left)), *row[1:])
    console.print(table)


def print_trace(
    run: RunRecord,
    steps: list[StepRecord],
    calls: list[CallRecord],
    console: Console | None = None,
    full: bool = False,
    decisions: list[Decision] | None = None,
) -> None:
    """The per-node table of one run, errors spelled out below it; `full` adds every step's inputs,
    outputs, and its model calls' prompts and replies; `decisions`: its cascade calls' (who
    answered and why)."""
    console = console or Console()
    console.print(
        _text(f"run {run.run_id} of {_plain(run.flow)}: {run.status}  tokens {run.tokens}  cost ${run.cost_usd:.6f}"),
    )
    if run.version:
        console.print(_text(f"version {run.version[:12]}"))
    rows = [
        [_plain(step.node), step.status, str(step.attempt), str(step.tokens), f"{step.cost_usd:.6f}",
         _seconds(step.started_at, step.ended_at), _plain(step.error) if step.error else _short(step.outputs, 200)]
        for step in steps
    ]  # fmt: skip
    headers = ("node", "status", "att", "tokens", "cost $", "secs")
    fixed = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    table = compact_table()
    for i, name in enumerate(headers):
        table.add_column(name, no_wrap=True, justify="right" if i > 1 else "left", min_width=fixed[i])
    spare = console.width - sum(fixed) - 2 * len(fixed)
    table.add_column("outputs / error", overflow="ellipsis", no_wrap=True, max_width=max(10, spare))
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)
    for step in steps:
        if step.error and not full:
            console.print(_text(f"{step.node} {step.status}: {step.error}"))
    if full:
        _print_details(steps, calls, console)
    console.print(
        f"{len(calls)} model call(s)" + ("" if full else "; --full shows inputs, outputs, prompts and replies")
    )
    for line in cascade_lines(decisions or []):
        console.print(_text(line))
    if split := cascade_split(calls):
        console.print(_text(split))


def cascade_lines(decisions: list[Decision]) -> list[str]:
    """One line per cascade call of a run: who answered, why, and what each model cost."""
    return [
        f"cascade {d.node}: {d.by} answered ({d.reason}); student ${d.student_cost_usd:.6f}"
        + (f", teacher ${d.teacher_cost_usd:.6f}" if d.by == "teacher" else "")
        for d in decisions
    ]


def cascade_split(calls: list[CallRecord]) -> str:
    """A cascade's cost split (teacher calls carry `cascade: teacher`), or "" when no node escalated."""
    teacher = [c for c in calls if c.request.get("cascade") == "teacher"]
    if not teacher:
        return ""
    student = [c for c in calls if c.request.get("cascade") != "teacher"]
    paid = sum(c.cost_usd for c in teacher)
    rest = sum(c.cost_usd for c in student)
    return f"cascade: teacher {len(teacher)} call(s) ${paid:.6f}; student and other calls {len(student)} ${rest:.6f}"


def compact_table() -> Table:
    """A borderless table: columns two spaces apart, so more fits in 80 columns."""
    return Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True)


def _print_details(steps: list[StepRecord], calls: list[CallRecord], console: Console) -> None:
    by_node: dict[str, list[CallRecord]] = {}
    for call in calls:
        by_node.setdefault(call.node, []).append(call)
    for step in steps:
        console.rule(_text(f"{step.node} ({step.status}, attempt {step.attempt})"), align="left")
        console.print(_text("inputs: " + _json(step.inputs)))
        console.print(_text("outputs: " + _json(step.outputs)))
        if step.error:
            console.print(_text("error: " + step.error))
        for call in by_node.pop(step.node, []):
            _print_call(call, console)


def _print_call(call: CallRecord, console: Console) -> None:
    hit = ", from cache" if call.cache_hit else ""
    probe = ", purpose: probe" if call.purpose == "probe" else ""  # measured by its node, not its answer
    retry = f", attempt {call.attempt}" if call.attempt > 1 else ""
    waited = f", waited {call.wait_s:.2f} s" if call.wait_s >= 0.005 else ""  # backoff, Retry-After, rate limiter
    tokens = f"{call.input_tokens}+{call.output_tokens} tokens"
    console.print(_text(f"model call to {call.model} ({tokens}{hit}{probe}{retry}{waited})"))
    request = call.request
    if "prompt" in request:
        console.print(_text("prompt:\n" + _indent(str(request["prompt"]))))
    for message in request.get("messages", []):
        console.print(_text(f"{message.get('role', '?')}:\n" + _indent(str(message.get("content", "")))))
    if call.error:
        console.print(_text("error: " + call.error))
    else:
        console.print(_text("reply:\n" + _indent(call.response or "")))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=None) if value is not None else "-"


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines()) or "  "
