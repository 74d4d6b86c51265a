"""`batch` and `experiments`: a dataset through a flow, and the experiments recorded."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import click

from studio.cli.common import (
    EXIT_FAILED,
    db_option,
    friendly,
    json_option,
    open_store,
    pairs,
    print_json,
)
from studio.cli.hardening import user_options

EXIT_INTERRUPTED = 130
"""What a shell reports for a command stopped by Ctrl+C (128 + SIGINT)."""


@click.command()
@click.argument("flow", required=False, type=click.Path(dir_okay=False))
@click.option("--data", type=click.Path(dir_okay=False), help="Dataset: JSONL (one object a line) or CSV.")
@click.option("--map", "map_inputs", multiple=True, metavar="INPUT=COLUMN", help="Feed a flow input from a column.")
@click.option("--expect", multiple=True, metavar="OUTPUT=COLUMN", help="Compare a flow output with a column.")
@click.option(
    "--metric",
    default=None,
    metavar="NAME",
    help="exact, contains, f1, regex, json_match, llm_judge, or module:function (default: exact when expected).",
)
@click.option("--judge", default=None, metavar="ALIAS", help="llm_judge's model alias (default: judge, else default).")
@click.option("--rubric", default=None, help="llm_judge's rubric, or @FILE.")
@click.option("--concurrency", type=click.IntRange(1), default=8, show_default=True, help="Examples running at once.")
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the first N examples.")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write one JSON line per example here.")
@click.option("--model", "models", multiple=True, metavar="ALIAS=MODEL", help="Swap a model alias.")
@click.option("--resume", default=None, metavar="EXPERIMENT_ID", help="Continue a batch that was stopped.")
@click.option(
    "--retry-errors", is_flag=True, help="With --resume: run the examples whose run failed again (the others are kept)."
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Run examples in this process, or as Ray tasks (extra `ray`).",
)
@click.option(
    "--ray-address", default=None, metavar="ADDR", help="Join this Ray cluster (default: start a local Ray runtime)."
)
@click.option("--cache/--no-cache", default=True, help="Serve repeated model calls from the LLM cache (default on).")
@click.option(
    "--warm-cascade",
    is_flag=True,
    help="Cascade nodes ask their teacher alone and keep every answer: seeds the memory their student recalls.",
)
@db_option
@json_option
@user_options
@friendly
def batch(
    flow: str | None,
    data: str | None,
    map_inputs: tuple[str, ...],
    expect: tuple[str, ...],
    metric: str | None,
    judge: str | None,
    rubric: str | None,
    concurrency: int,
    limit: int | None,
    out: str | None,
    models: tuple[str, ...],
    resume: str | None,
    retry_errors: bool,
    executor: str,
    ray_address: str | None,
    cache: bool,
    warm_cascade: bool,
    db: str | None,
    as_json: bool,
) -> None:
    """Run a dataset through a flow and score it; every example's run is kept under one experiment.

    Example: flowstudio batch flows/ticket-triage.yaml --data flows/data/triage-labelled.jsonl --metric exact
    """

    from studio.errors import InputError
    from studio.evaluate.batch import BatchOptions, prepare_batch

    if warm_cascade and executor == "ray":
        raise InputError("--warm-cascade runs the batch in this process: leave out --executor ray", field="--executor")
    if resume is None and (flow is None or data is None):
        raise InputError(
            "give a FLOW and --data, or --resume EXPERIMENT_ID", field="FLOW" if flow is None else "--data"
        )
    version = None
    if flow is not None:
        from studio.cli.versions import flow_and_version

        flow, version = flow_and_version(flow, db)  # NAME@TAG / NAME@ID: the published snapshot
    options = BatchOptions(
        version=version,
        flow=flow or "",
        data=data or "",
        map_inputs=pairs(map_inputs, "--map", parse_json=False),
        expect=pairs(expect, "--expect", parse_json=False),
        metric=metric,
        judge=judge,
        rubric=rubric,
        limit=limit,
        models=pairs(models, "--model", parse_json=False),
        cache=cache,
        concurrency=concurrency,
        executor="ray" if executor == "ray" else "local",
        ray_address=ray_address,
        warm_cascade=warm_cascade,
    )
    if flow is not None:
        from studio.cli.checks import EXTRA_ALIASES, check_aliases
        from studio.flow.spec import load_flow

        check_aliases(load_flow(flow), options.models, [judge, *EXTRA_ALIASES])
    store = open_store(db)
    try:
        if resume is not None:
            from studio.store.base import resolve_id

            resume = resolve_id(store, "experiment", resume)
        prepared = prepare_batch(options, store, resume=resume, retry_errors=retry_errors)
        try:
            result = _batch_live(prepared, store) if as_json else _batch_with_progress(prepared, store)
        except KeyboardInterrupt:
            again = (
                f"; continue with: flowstudio batch --resume {prepared.experiment_id}" if prepared.experiment_id else ""
            )
            click.echo(f"interrupted: the runs in flight are cancelled{again}", err=True)
            sys.exit(EXIT_INTERRUPTED)
    finally:
        store.close()
    if out:
        result.write_jsonl(out)
    if as_json:
        print_json({**result.summary, "out": out})
    else:
        from studio.evaluate.batch import first_errors, first_mismatches, print_summary

        mismatches = list(first_mismatches(result.results, result.dataset.examples))
        print_summary(result.summary, list(first_errors(result.results)), out, mismatches=mismatches)
    if result.summary["examples"] and not result.summary["succeeded"]:
        from studio.evaluate.batch import first_errors

        if as_json:
            click.echo(f"error: {next(first_errors(result.results), 'no run succeeded')}", err=True)
        sys.exit(EXIT_FAILED)


def _batch_started(experiment_id: str, examples: int) -> None:
    click.echo(
        f"experiment {experiment_id}: {examples} examples (continue with: flowstudio batch --resume {experiment_id})",
        err=True,
    )


def _batch_live(prepared: Any, store: Any) -> Any:
    """The batch with its progress written to the experiment's summary (what the studio shows)."""
    from studio.evaluate.batch import run_prepared
    from studio.evaluate.live import LiveSummary
    from studio.evaluate.summary import confidence_interval

    live: list[LiveSummary] = []
    scores: dict[str, float] = {}

    def started(experiment_id: str, examples: int) -> None:
        _batch_started(experiment_id, examples)
        live.append(LiveSummary(store, experiment_id))
        live[0].update(force=True, kind="batch", done=0, total=examples)

    def progress(*, done: int, total: int, score: float | None, cost_usd: float, result: Any = None, **_: Any) -> None:
        if result is not None and result.outcome.run_id and result.score is not None:
            scores[result.outcome.run_id] = result.score  # so a stopped batch still shows each example's score
        if live and live[0].due(force=done == total):  # the CI and the copy only when a write is due
            ci = [round(bound, 6) for bound in confidence_interval(list(scores.values()))] if scores else None
            fields = {"done": done, "total": total, "score": score, "score_ci": ci, "scores": dict(scores)}
            live[0].update(force=True, **fields, cost_usd=round(cost_usd, 10), rate_limit=_pressure())

    return asyncio.run(run_prepared(prepared, store, progress=progress, on_start=started))


def _pressure() -> str | None:
    """The model limiters' state while calls wait on them (`waiting on rate limit: 20 req/s`)."""
    from studio.models.limiter import pressure

    return pressure()


def _pressure_column() -> Any:
    """A progress column that reads the limiters' state at every refresh, so a batch held back
    by a rate limit says so even while no example finishes."""
    from rich.progress import ProgressColumn, Task
    from rich.text import Text

    class PressureColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            return Text(_pressure() or "", style="yellow")

    return PressureColumn()


def _batch_with_progress(prepared: Any, store: Any) -> Any:
    """The batch under a rich progress bar: examples done, score and cost so far, ETA."""

    from rich.progress import TimeRemainingColumn

    from studio.cli.progress import progress_bar
    from studio.evaluate.batch import run_prepared

    texts = ("score {task.fields[score]}", "cost ${task.fields[cost]}", "ETA")
    extra = (TimeRemainingColumn(), _pressure_column())
    with progress_bar(
        "{task.description}", texts, extra=extra, total=prepared.examples, description="batch", score="-", cost="0"
    ) as bar:

        def started(experiment_id: str, examples: int) -> None:
            bar.print(
                f"experiment {experiment_id}: {examples} examples "
                f"(continue with: flowstudio batch --resume {experiment_id})"
            )
            bar.update(description=experiment_id)

        def progress(*, done: int, total: int, score: float | None, cost_usd: float, **_: Any) -> None:
            shown = "-" if score is None else f"{score:.3f}"
            bar.update(completed=done, total=total, score=shown, cost=f"{cost_usd:.4f}")

        return asyncio.run(run_prepared(prepared, store, progress=progress, on_start=started))


@click.command()
@click.argument("experiment_id", required=False)
@click.option("--limit", default=50, show_default=True, help="How many experiments to list.")
@click.option("--kind", default=None, help="Only this kind (batch, optimize).")
@db_option
@json_option
@friendly
def experiments(experiment_id: str | None, limit: int, kind: str | None, db: str | None, as_json: bool) -> None:
    """List experiments (batches, optimizer searches, blames), newest first, or show one.

    Example: flowstudio experiments --json
    """
    from studio.errors import InputError
    from studio.evaluate.batch import experiment_row, print_experiments
    from studio.store.base import resolve_id

    store = open_store(db)
    try:
        if experiment_id is None:
            records = store.list_experiments(limit=limit, kind=kind)
            if as_json:
                print_json([experiment_row(r) for r in records])
            else:
                print_experiments(records)
            return
        experiment_id = resolve_id(store, "experiment", experiment_id)
        record = store.get_experiment(experiment_id)
        if record is None:
            raise InputError(f"no experiment {experiment_id!r} in {store.path}", field="EXPERIMENT_ID")
        runs = store.runs_of_experiment(experiment_id)
        if as_json:
            print_json(
                {**experiment_row(record), "config": record.config, "summary": record.summary, "runs": len(runs)}
            )
        else:
            _show(record, len(runs))
    finally:
        store.close()


def _show(record: Any, runs: int) -> None:
    """One experiment for people, in the words of the command that made it (batch, optimize, blame)."""
    summary, kind, experiment_id = record.summary, record.kind, record.experiment_id
    if summary is None:
        again = f" (continue with: flowstudio batch --resume {experiment_id})" if kind == "batch" else ""
        click.echo(f"{kind} {experiment_id} did not finish: {runs} runs recorded{again}")
    elif kind == "batch" and "resumed" in summary:
        from studio.evaluate.batch import print_summary

        print_summary(summary, [], None)
    elif kind == "optimize" and "before" in summary and "after" in summary:
        from studio.optimize.report import show

        show(summary)
    elif kind == "blame" and "culprits" in summary:
        from studio.cli.blame import show_blame

        show_blame({"blame_id": experiment_id, **summary})
    else:
        _show_fields(record, runs)


def _show_fields(record: Any, runs: int) -> None:
    """An experiment of another kind, or one still running or stopped: its plain summary fields."""
    from studio.cli.reports import _short

    summary = record.summary or {}
    click.echo(
        f"{record.kind} {record.experiment_id} · {record.flow}: {summary.get('status', 'finished')}, {runs} runs"
    )
    for key, value in summary.items():
        if key != "status" and isinstance(value, (str, int, float)) and not isinstance(value, bool):
            click.echo(f"  {key}: {_short(value)}")
