"""`runs` and `trace`: reading recorded runs."""

from __future__ import annotations

import sys
from typing import Any

import click

from studio.cli.common import (
    EXIT_FAILED,
    db_option,
    friendly,
    json_option,
    open_store,
    print_json,
)


@click.command()
@click.option("--limit", default=50, show_default=True, help="How many runs to list.")
@click.option("--flow", default=None, help="Only runs of this flow name.")
@click.option(
    "--status",
    default=None,
    type=click.Choice(["running", "succeeded", "failed", "waiting", "cancelled", "interrupted"]),
)
@click.option(
    "--version", "version", default=None, metavar="ID", help="Only runs of this flow version (an id or its beginning)."
)
@click.option("--reviewed/--unreviewed", "reviewed", default=None, help="Only runs with (without) feedback.")
@db_option
@json_option
def runs(
    limit: int,
    flow: str | None,
    status: str | None,
    version: str | None,
    reviewed: bool | None,
    db: str | None,
    as_json: bool,
) -> None:
    """List recorded runs, newest first.

    Example: flowstudio runs --limit 10 --json
    """
    from studio.cli.reports import print_runs, run_row
    from studio.store.base import RunFilter

    store = open_store(db)
    where = RunFilter(flow=flow, status=status, version=version.lower() if version else None)
    if reviewed is None:
        records = store.query_runs(where, limit=limit)
    else:
        records = _by_review(store, where, reviewed, limit)
    if as_json:
        print_json([run_row(r) for r in records])
    else:
        print_runs(records)


def _by_review(store: Any, where: Any, reviewed: bool, limit: int) -> list[Any]:
    """The newest `limit` runs matching `where` that have feedback (`reviewed`) or have none."""
    found: list[Any] = []
    offset = 0
    while len(found) < limit:
        page = store.query_runs(where, offset=offset, limit=500)
        if not page:
            break
        with_feedback = store.reviewed([run.run_id for run in page])
        found += [run for run in page if (run.run_id in with_feedback) == reviewed]
        offset += len(page)
    return found[:limit]


@click.command()
@click.argument("run_ids", nargs=-1, required=True, metavar="RUN_ID | export RUN_ID...")
@click.option(
    "--otlp",
    default=None,
    metavar="URL",
    help="With `export`: the OTLP/HTTP collector, e.g. http://127.0.0.1:6006 (default $OTEL_EXPORTER_OTLP_ENDPOINT).",
)
@click.option(
    "--full", is_flag=True, help="Also every step's inputs and outputs, and each model call's prompt and reply."
)
@db_option
@json_option
@friendly
def trace(run_ids: tuple[str, ...], otlp: str | None, full: bool, db: str | None, as_json: bool) -> None:
    """Show a run's steps: outputs, tokens, cost, errors; or send stored runs as OpenTelemetry spans.

    RUN_ID may be any unique prefix of a run id. `flowstudio trace export RUN_ID... --otlp URL`
    exports each run (its steps, model calls and tool calls) to an OTLP collector such as Phoenix,
    Jaeger or Langfuse.

    Example: flowstudio trace 3f2a9c1d --full
    """
    from studio.cli.reports import print_trace
    from studio.errors import InputError
    from studio.store.base import resolve_id, step_row

    if run_ids[0] == "export":
        _export(run_ids[1:], otlp, db, as_json)
        return
    if len(run_ids) > 1:
        raise InputError("give one RUN_ID (or `trace export RUN_ID... --otlp URL`)", field="RUN_ID")
    run_id = run_ids[0]
    store = open_store(db)
    run_id = resolve_id(store, "run", run_id)
    record = store.get_run(run_id)
    if record is None:
        raise InputError(f"no run {run_id!r} in {store.path}", field="RUN_ID")
    steps = store.steps(run_id)
    if as_json:
        print_json([step_row(s) for s in steps])
    else:
        from studio.runtime.memory import book_for

        decisions = [d for d in book_for(store).decisions(record.flow) if d.run_id == run_id]
        print_trace(record, steps, store.calls(run_id), full=full, decisions=decisions)


def _export(run_ids: tuple[str, ...], otlp: str | None, db: str | None, as_json: bool) -> None:
    from studio.errors import InputError
    from studio.store.base import resolve_id
    from studio.telemetry.setup import endpoint_from_env, missing_extra, traces_url

    url = traces_url(otlp) if otlp else endpoint_from_env()
    if not url:
        raise InputError("give --otlp URL or set OTEL_EXPORTER_OTLP_ENDPOINT", field="--otlp")
    if not run_ids:
        raise InputError("name the runs to export: trace export RUN_ID...", field="RUN_ID")
    try:
        from studio.telemetry.stored import export_runs, gather
    except ImportError:
        raise InputError(missing_extra(), field="--otlp") from None
    store = open_store(db)
    runs = []
    for run_id in run_ids:
        found = gather(store, resolve_id(store, "run", run_id))
        if found is None:
            raise InputError(f"no run {run_id!r} in {store.path}", field="RUN_ID")
        runs.append(found)
    exported, failures = export_runs(runs, url)
    if as_json:
        print_json({"runs": list(run_ids), "spans": exported, "failed_batches": failures, "endpoint": url})
    else:
        click.echo(f"exported {exported} spans of {len(runs)} run(s) to {url}")
    if failures:
        sys.exit(EXIT_FAILED)
