"""`blame`: which node made a wrong answer wrong, by counterfactual re-runs."""

from __future__ import annotations

import asyncio
from typing import Any

import click

from studio.cli.common import db_option, friendly, json_option, open_store, pairs, print_json


@click.command()
@click.argument("target", metavar="EXPERIMENT|RUN")
@click.option(
    "--example", type=click.IntRange(0), default=None, help="Only this example (its index) of the experiment."
)
@click.option(
    "--budget-calls",
    type=click.IntRange(1),
    default=200,
    show_default=True,
    help="Model calls the whole blame may spend on counterfactual re-runs, shared evenly by the failing runs.",
)
@click.option("--samples", type=click.IntRange(1), default=4, show_default=True, help="Re-samples per candidate node.")
@click.option(
    "--counterfactuals",
    default="resample,demos,variant",
    show_default=True,
    metavar="KINDS",
    help="Counterfactual versions of a node to try: resample (temperature > 0), demos (other demos, or"
    " demos from examples that scored 1), variant (the node in the optimizer's chosen flow, when stored).",
)
@click.option("--expect", multiple=True, metavar="OUTPUT=VALUE", help="For a RUN in no experiment: the right output.")
@click.option("--metric", default=None, metavar="NAME", help="With --expect: the metric (default exact).")
@db_option
@json_option
@friendly
def blame(
    target: str,
    example: int | None,
    budget_calls: int,
    samples: int,
    counterfactuals: str,
    expect: tuple[str, ...],
    metric: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Name the node most likely to blame for each failing example of an experiment (or one run).

    Each LLM node upstream of the output is run again in counterfactual versions (re-sampled at
    temperature > 0, with other demos, as the optimizer's variant) while everything upstream of it
    is reused; a node's blame is how often its strongest kind turns the answer right, and each
    kind's flips and calls are reported.

    Example: flowstudio blame 3f2a9c1d0b7e4a55 --budget-calls 100
    """
    from studio.evaluate import blame as lib
    from studio.evaluate.counterfactuals import parse_kinds
    from studio.evaluate.live import LiveSummary

    try:
        kinds = parse_kinds(counterfactuals)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--counterfactuals") from None
    store = open_store(db)
    try:
        kind, target = _target(store, target)
        if kind == "experiment":
            failing = lib.failing_of_experiment(store, target, example)
        else:
            if example is not None:
                raise click.BadParameter("--example needs an EXPERIMENT, not a run", param_hint="--example")
            failing = lib.failing_of_run(store, target, expect=pairs(expect, "--expect", True), metric_name=metric)
        options = lib.BlameOptions(samples=samples, budget_calls=budget_calls, counterfactuals=kinds)
        flow = failing[0].record.flow if failing else ""
        saved = lib.create(store, flow=flow, target=target, options=options)
        live = LiveSummary(store, saved)

        def progress(done: int, calls: int, *, force: bool = False) -> None:
            live.update(force=force, done=done, total=len(failing), calls=calls, budget_calls=budget_calls)

        progress(0, 0, force=True)  # the studio shows it running from the start

        blames = asyncio.run(lib.blame_all(store, failing, options, progress))
        lib.finish(store, saved, blames, target=target, failing=len(failing), budget_calls=budget_calls)
    finally:
        store.close()
    result = {"blame_id": saved, **lib.summary(blames, target), "failing_found": len(failing)}
    needed = lib.calls_needed(result, budget_calls)
    if needed is not None:
        click.echo(
            f"note: --budget-calls {budget_calls} reached {len(blames)} of the {len(failing)} failing examples; "
            f"give --budget-calls {needed} or so to blame them all",
            err=True,
        )
    if as_json:
        print_json(result)
    else:
        show_blame(result)


def _target(store: Any, given: str) -> tuple[str, str]:
    """("experiment" | "run", the whole id) that `given` is or uniquely begins (exit 2 otherwise)."""
    from studio.errors import InputError
    from studio.store.base import resolve_id

    experiments = store.ids_with_prefix("experiment", given, limit=4)
    runs = store.ids_with_prefix("run", given, limit=4)
    if given in experiments or (experiments and not runs):
        return "experiment", resolve_id(store, "experiment", given)
    if given in runs or (runs and not experiments):
        return "run", resolve_id(store, "run", given)
    if not runs:
        raise InputError(f"no experiment or run {given!r} in {store.path} (nor one whose id begins so)", field="TARGET")
    shown = ", ".join([*experiments, *runs][:3])
    raise InputError(
        f"{given!r} begins more than one experiment or run id ({shown}, ...); give more characters", field="TARGET"
    )


def show_blame(result: dict[str, Any]) -> None:
    """A blame for people: per failing example its culprit, blame interval and the kinds that flipped it."""
    from rich.console import Console

    from studio.cli.reports import compact_table
    from studio.evaluate.blame import culprit_rows

    console = Console()
    runs = result["runs"]
    if not runs:
        console.print("No failing examples: nothing to blame.")
        return
    table = compact_table()
    table.add_column("example", justify="right")
    table.add_column("run", no_wrap=True)
    table.add_column("culprit", overflow="fold")
    table.add_column("blame (95%)", no_wrap=True)
    table.add_column("flipped by", no_wrap=True)
    for row in culprit_rows(result, sep="\n"):  # a line per kind: 80 columns hold whole run ids
        table.add_row(
            str(row["example"]), row["run"], row["culprit"], f"{row['blame']}\n{row['interval']}", row["flipped by"]
        )
    console.print(table)
    culprits = ", ".join(f"{node} ({count})" for node, count in result["culprits"].items()) or "none"
    console.print(
        f"{result['failing']} failing; likely culprits: {culprits}; {result['calls']} calls. Saved as {result['blame_id']}."
    )
