"""`validate`, `fmt` and `schema`: the flow file, without running anything."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from studio.cli.common import (
    EXIT_FAILED,
    friendly,
    print_json,
)


@click.command()
@click.argument("flow", type=click.Path(dir_okay=False))
@friendly
def validate(flow: str) -> None:
    """Check a flow file without running anything.

    Example: flowstudio validate flows/ticket-triage.yaml
    """
    from studio.flow.spec import load_flow
    from studio.runtime.compiler import compile_flow

    plan = compile_flow(load_flow(flow))
    click.echo(f"OK {flow}: {len(plan.nodes)} nodes")
    from studio.runtime.model_checks import capability_warnings

    for warning in capability_warnings(plan):
        click.echo(f"warning: {flow}: {warning}", err=True)


@click.command()
@click.argument("flows", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--check", is_flag=True, help="Exit 1 if a file is not formatted; write nothing.")
@friendly
def fmt(flows: tuple[str, ...], check: bool) -> None:
    """Rewrite flow files in canonical form (key order, indentation); comments are kept.

    Every file must validate first: a file with a problem is refused (exit 2) and nothing is written.
    Example: flowstudio fmt flows/*.yaml
    """
    from studio.flow.fmt import format_text
    from studio.flow.spec import load_flow
    from studio.runtime.compiler import compile_flow

    texts = {flow: compile_flow(load_flow(flow)).flow.text for flow in flows}
    unformatted = []
    for flow, text in texts.items():
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


@click.command()
def schema() -> None:
    """Print the JSON Schema of flow files (for editors and CI).

    Example: flowstudio schema > flow.schema.json
    """
    from studio.runtime.nodedoc import full_schema

    print_json(full_schema())
