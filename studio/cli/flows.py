"""`validate`, `fmt` and `schema`: the flow file, without running anything."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from studio.cli.common import (
    EXIT_FAILED,
    friendly,
    print_json,
)

if TYPE_CHECKING:
    from studio.runtime.compiler import Plan


@click.command()
@click.argument("flow", type=click.Path(dir_okay=False))
@friendly
def validate(flow: str) -> None:
    """Check a flow file without running anything.

    Problems that only show when it runs here (a model alias whose key is not set, a local model
    not installed, a node its model cannot serve) are printed as warnings; the exit code stays 0.
    Example: flowstudio validate flows/ticket-triage.yaml
    """
    from studio.flow.spec import load_flow
    from studio.runtime.compiler import compile_flow

    plan = compile_flow(load_flow(flow))
    click.echo(f"OK {flow}: {len(plan.nodes)} nodes")
    from studio.runtime.lint import flow_warnings

    for found in flow_warnings(plan):  # each check of `studio.runtime.lint.CHECKS`
        click.echo(f"warning: {found}", err=True)


@click.command()
@click.argument("flows", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--check", is_flag=True, help="Exit 1 if a file is not formatted; write nothing.")
@click.option(
    "--fix",
    is_flag=True,
    help="Also rewrite what validate warns about that has one fix: a list input gathering branches "
    "gets a control.join node.",
)
@friendly
def fmt(flows: tuple[str, ...], check: bool, fix: bool) -> None:
    """Rewrite flow files in canonical form (key order, indentation); comments are kept.

    Every file must validate first: a file with a problem is refused (exit 2) and nothing is written.
    Example: flowstudio fmt flows/*.yaml
    Example: flowstudio fmt --fix flows/old-flow.yaml
    """
    from studio.flow.fmt import format_text
    from studio.flow.spec import load_flow
    from studio.runtime.compiler import compile_flow

    plans = {flow: compile_flow(load_flow(flow)) for flow in flows}
    fixes = {flow: _fixed(plan, flow) if fix else (plan.flow.text, []) for flow, plan in plans.items()}
    unformatted = []
    for flow, (text, notes) in fixes.items():
        formatted = format_text(text)
        if formatted == plans[flow].flow.text:
            continue
        unformatted.append(flow)
        if not check:
            Path(flow).write_text(formatted, encoding="utf-8")
            for note in notes:
                click.echo(f"fixed {flow}: {note}")
            click.echo(f"formatted {flow}")
    if check and unformatted:
        click.echo("not formatted: " + ", ".join(unformatted), err=True)
        sys.exit(EXIT_FAILED)


def _fixed(plan: Plan, flow: str) -> tuple[str, list[str]]:
    """The flow's text with each branch-gathering list input given a control.join node (the result
    must compile, else nothing is written), and what changed in words."""
    from studio.flow.fmt import insert_joins
    from studio.flow.spec import load_flow_text
    from studio.runtime.compiler import compile_flow
    from studio.runtime.gather_checks import JOIN_OUTPUT, gathered_lists, join_type

    lists = [(g.node, g.port) for g in gathered_lists(plan)]
    if not lists:
        return plan.flow.text, []
    join_key = join_type()
    text, added = insert_joins(plan.flow.text, lists, join_key, JOIN_OUTPUT)
    compile_flow(load_flow_text(text, path=Path(flow)))
    notes = [
        f"nodes.{node}.inputs.{port} reads ${join}.{JOIN_OUTPUT}, a new {join_key} node"
        for (node, port), join in zip(lists, added, strict=True)
    ]
    return text, notes


@click.command()
def schema() -> None:
    """Print the JSON Schema of flow files (for editors and CI).

    Example: flowstudio schema > flow.schema.json
    """
    from studio.runtime.nodedoc import full_schema

    print_json(full_schema())
