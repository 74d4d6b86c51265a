"""`run`, `resume` and `rerun`: one run of a flow, recorded in the store."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

import click

from studio.cli.common import (
    friendly,
    full_run_id,
    options_from,
    pairs,
    report,
    run_options,
    stored_options,
)
from studio.cli.hardening import user_options
from studio.cli.versions import flow_and_version

if TYPE_CHECKING:
    from studio.runtime.engine import RunResult


@click.command()
@click.argument("flow", type=click.Path(dir_okay=False), metavar="FLOW | NAME@TAG | NAME@ID")
@click.option(
    "-i",
    "--input",
    "inputs",
    multiple=True,
    metavar="NAME=VALUE",
    help="A flow input: the text as typed for a str input, else JSON (text when it does not parse).",
)
@click.option("--inputs", "inputs_file", type=click.File("r"), help="A JSON object of inputs.")
@click.option(
    "--model",
    "models",
    multiple=True,
    metavar="ALIAS=MODEL",
    help="Swap a model alias, e.g. default=scripted/script.yaml.",
)
@click.option("--stream", is_flag=True, help="Print LLM nodes' tokens to stderr as they arrive.")
@click.option(
    "--otlp",
    default=None,
    metavar="URL",
    help="Export the run as OpenTelemetry spans to this OTLP/HTTP collector (default $OTEL_EXPORTER_OTLP_ENDPOINT).",
)
@run_options
@user_options
@friendly
def run(
    flow: str,
    inputs: tuple[str, ...],
    inputs_file: Any,
    models: tuple[str, ...],
    stream: bool,
    otlp: str | None,
    **flags: Any,
) -> None:
    """Run a flow headless and record it in the store.

    Example: flowstudio run flows/ticket-triage.yaml -i ticket="The app crashes" --json
    """
    from studio.cli.checks import check_aliases, typed_inputs
    from studio.flow.spec import load_flow
    from studio.flow.values import load_json
    from studio.runtime.compiler import compile_flow
    from studio.runtime.model_checks import require_models
    from studio.runtime.runner import run_flow_async

    flow, version = flow_and_version(flow, flags["db"])  # NAME@TAG / NAME@ID: the published snapshot
    given = load_json(inputs_file.read(), "--inputs") if inputs_file else {}
    if not isinstance(given, dict):
        raise click.BadParameter("must hold a JSON object", param_hint="--inputs")
    loaded = load_flow(flow)
    given.update(typed_inputs(loaded, pairs(inputs, "-i", parse_json=False)))
    options = options_from(None, flags)
    options.models = pairs(models, "--model", parse_json=False)
    options.stream = stream
    options.version = version
    check_aliases(loaded, options.models)
    require_models(compile_flow(loaded, options.models))  # keys set, local models there: before any node runs
    printer = TokenPrinter()
    run_async = run_flow_async(
        flow,
        given,
        options=options,
        db=flags["db"],
        max_concurrency=flags["max_concurrency"],
        hooks=[printer] if stream else None,
        otlp=otlp,
    )
    result = asyncio.run(run_async)
    printer.end()
    report(result, flags["as_json"], flags["db"])


class TokenPrinter:
    """A hook printing `token` events to stderr, under a `[node]` heading whenever the node changes
    (stdout stays free for `--json`)."""

    wants_tokens = True

    def __init__(self) -> None:
        self.node: str | None = None

    def __call__(self, event: str, **details: Any) -> None:
        if event != "token":
            return
        if details["node"] != self.node:
            self.end()
            self.node = details["node"]
            click.echo(f"[{self.node}] ", nl=False, err=True)
        click.echo(details["text"], nl=False, err=True)

    def end(self) -> None:
        """Close the current node's line."""
        if self.node is not None:
            click.echo("", err=True)
            self.node = None


@click.command()
@click.argument("run_id")
@click.option(
    "--value",
    "values",
    multiple=True,
    metavar="NODE=VALUE",
    help="Answer a waiting human.input node: the text as typed for a str question, else JSON.",
)
@run_options
@friendly
def resume(run_id: str, values: tuple[str, ...], **flags: Any) -> None:
    """Continue a crashed, failed or waiting run; finished nodes are not run again.

    Example: flowstudio resume 3f2a9c1d0b7e4a55 --value approve=true
    """
    from studio.runtime.runner import resume_run_async

    run_id = full_run_id(run_id, flags["db"])
    options = stored_options(run_id, flags["db"], flags)
    supplied = _answers(run_id, flags["db"], pairs(values, "--value", parse_json=False))
    run_async = resume_run_async(
        run_id, values=supplied, options=options, db=flags["db"], max_concurrency=flags["max_concurrency"]
    )
    report(_worded(run_async), flags["as_json"], flags["db"])


def _answers(run_id: str, db: str | None, texts: dict[str, str]) -> dict[str, Any]:
    """`--value` texts typed by the waiting questions they answer."""
    from studio.cli.common import open_store
    from studio.cli.waiting import typed_values

    store = open_store(db)
    try:
        return typed_values(store, run_id, texts)
    finally:
        store.close()


@click.command()
@click.argument("run_id")
@click.option("--from", "from_node", required=True, metavar="NODE", help="The first node to execute again.")
@run_options
@friendly
def rerun(run_id: str, from_node: str, **flags: Any) -> None:
    """Run again from NODE: reuse everything upstream, re-execute NODE and what depends on it.

    Example: flowstudio rerun 3f2a9c1d0b7e4a55 --from reply
    """
    from studio.runtime.runner import rerun_async

    run_id = full_run_id(run_id, flags["db"])
    options = stored_options(run_id, flags["db"], flags)
    run_async = rerun_async(
        run_id, from_node, options=options, db=flags["db"], max_concurrency=flags["max_concurrency"]
    )
    report(_worded(run_async), flags["as_json"], flags["db"])


OPTIONS = {"run_id": "RUN_ID", "from_node": "--from"}
"""The runner's neutral fields, as the command line names them."""


def _worded(run_async: Coroutine[Any, Any, RunResult]) -> RunResult:
    """Run it; the runner's errors in the command line's words (`values.NODE` is `--value NODE`)."""
    from studio.errors import InputError
    from studio.runtime.runner import FlowChanged

    try:
        return asyncio.run(run_async)
    except FlowChanged as err:
        raise InputError(f"{err.message} (use `flowstudio rerun --from NODE`)", file=err.file) from None
    except InputError as err:
        field = err.field or ""
        if field.startswith("values."):
            raise InputError(err.message, field=f"--value {field.removeprefix('values.')}") from None
        if field in OPTIONS:
            raise InputError(err.message, file=err.file, field=OPTIONS[field]) from None
        raise
