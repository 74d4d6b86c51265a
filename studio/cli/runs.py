"""`runs` and `trace`: reading recorded runs."""

from __future__ import annotations

import click

from studio.cli.common import (
    db_option,
    friendly,
    json_option,
    open_store,
    print_json,
)


@click.command()
@click.option("--limit", default=50, show_default=True, help="How many runs to list.")
@click.option("--flow", default=None, help="Only runs of this flow name.")
@click.option("--status", default=None, type=click.Choice(["running", "succeeded", "failed", "waiting"]))
@db_option
@json_option
def runs(limit: int, flow: str | None, status: str | None, db: str | None, as_json: bool) -> None:
    """List recorded runs, newest first.

    Example: flowstudio runs --limit 10 --json
    """
    from studio.cli.reports import print_runs, run_row

    store = open_store(db)
    records = store.list_runs(limit=limit, flow=flow, status=status)
    if as_json:
        print_json([run_row(r) for r in records])
    else:
        print_runs(records)


@click.command()
@click.argument("run_id")
@click.option(
    "--full", is_flag=True, help="Also every step's inputs and outputs, and each model call's prompt and reply."
)
@db_option
@json_option
@friendly
def trace(run_id: str, full: bool, db: str | None, as_json: bool) -> None:
    """Show a run's steps: outputs, tokens, cost, errors. RUN_ID may be any unique prefix of a run id.

    Example: flowstudio trace 3f2a9c1d --full
    """
    from studio.cli.reports import print_trace, step_row
    from studio.errors import InputError
    from studio.store.base import resolve_id

    store = open_store(db)
    run_id = resolve_id(store, "run", run_id)
    record = store.get_run(run_id)
    if record is None:
        raise InputError(f"no run {run_id!r} in {store.path}", field="RUN_ID")
    steps = store.steps(run_id)
    if as_json:
        print_json([step_row(s) for s in steps])
    else:
        print_trace(record, steps, store.calls(run_id), full=full)
