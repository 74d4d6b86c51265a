"""`optimize`: search a better flow within a budget of model calls."""

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
from studio.cli.versions import flow_and_version, print_published, published_json

PRINTED = ("bootstrap", "blame", "search demos", "best", "round", "tie", "finished")
"""Search events printed as lines (each once a search or once a round, so a log written without a
terminal still says what the search did); the rest only update the progress bar's text."""


@click.command()
@click.argument("flow", type=click.Path(dir_okay=False), metavar="FLOW | NAME@TAG | NAME@ID")
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
@click.option(
    "--budget-calls",
    required=True,
    type=click.IntRange(1),
    help="Most model calls the search may make; scoring --test afterwards is counted apart, on the same line.",
)
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
@click.option("--publish", "publish_best", is_flag=True, help="Publish the optimized flow as a version of the flow.")
@click.option("--tag", default=None, metavar="NAME", help="With --publish: point this tag at the version.")
@db_option
@json_option
@friendly
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
    publish_best: bool,
    tag: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Search better instructions, demos, prompt form, strategy, models and graph for a flow, within a budget.

    Writes the optimized flow (never the input) and a report (markdown, JSON, Pareto plot) beside it;
    --publish also stores it as a version of the flow (`flowstudio versions NAME`). FLOW may be a
    published version (NAME@TAG, NAME@ID): its files are read from the store, and the optimized flow
    is written beside them unless --out says where.
    Example: flowstudio optimize bench/flows/topic.yaml --train train.jsonl --dev dev.jsonl --metric exact --budget-calls 300
    """

    from studio.optimize import OptimizeOptions, prepare
    from studio.optimize.evaluator import NothingSucceeds
    from studio.optimize.report import show

    _check_publish(publish_best, tag)
    flow, version = flow_and_version(flow, db)  # NAME@TAG / NAME@ID: the published snapshot
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
        map_inputs=pairs(map_inputs, "--map", parse_json=False),
        expect=pairs(expect, "--expect", parse_json=False),
        models=pairs(models, "--model", parse_json=False),
        judge=judge,
        rubric=rubric,
        concurrency=concurrency,
        max_cost_per_example=max_cost_per_example,
        minibatch=minibatch,
        width=width,
    )
    from studio.cli.checks import EXTRA_ALIASES, check_aliases
    from studio.flow.spec import load_flow

    check_aliases(load_flow(flow), options.models, [judge, proposer, *EXTRA_ALIASES])
    prepared = prepare(options)
    for note in prepared.notes:
        click.echo(f"note: {note}", err=True)
    store = open_store(db)
    published = None
    try:
        if as_json:
            result = _optimize_live(prepared, store)
        else:
            result = _optimize_with_progress(prepared, store)
        if publish_best:
            published = _publish(store, result, flow, version, tag)
    except KeyboardInterrupt:
        click.echo(f"interrupted: the best flow so far is in {prepared.out}", err=True)
        sys.exit(130)
    except NothingSucceeds as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(EXIT_FAILED)
    finally:
        store.close()
    if as_json:
        shown = result.as_json()
        print_json({**shown, "published": published_json(published)} if published else shown)
        return
    show(result.report)
    if published is not None:
        print_published(published)


def _check_publish(publish_best: bool, tag: str | None) -> None:
    """Refuse `--tag` without `--publish`, or a bad tag name, before any model call."""
    from studio.errors import InputError
    from studio.versions.history import check_tag

    if tag is None:
        return
    if not publish_best:
        raise InputError("--tag names the published version's tag: give --publish too", field="--tag")
    check_tag(tag)


def _publish(store: Any, result: Any, source: str, version: str | None, tag: str | None) -> Any:
    """Store the optimized flow as a version of the flow, under the input's file name (so it reads
    as a new version of that file, and a search that changed nothing gives the input's id)."""
    from pathlib import Path

    from studio.versions.history import store_snapshot
    from studio.versions.snapshot import take, with_entry_name

    report = result.report
    before, after = report["before"]["dev"], report["after"]["dev"]
    origin = f" from {version[:12]}" if version else ""
    note = f"optimize {result.experiment_id}{origin}: dev {_score(before)} -> {_score(after)}"
    snapshot = with_entry_name(take(report["flow_out"]), Path(source).name)
    return store_snapshot(store, snapshot, tag=tag, note=note)


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _optimize_live(prepared: Any, store: Any) -> Any:
    """The search with its progress (calls used of the budget, best dev score) in the experiment's summary."""
    from studio.evaluate.live import LiveSummary
    from studio.optimize.optimization import Optimization

    run = Optimization(prepared, store)
    live = LiveSummary(store, run.experiment_id)
    budget = prepared.options.budget_calls

    def progress(*, event: str, best: float | None, calls: int = 0, cost_usd: float = 0.0, **_: Any) -> None:
        fields: dict[str, Any] = {
            "event": event,
            "calls": calls,
            "budget_calls": budget,
            "done": calls,
            "total": budget,
        }
        fields["cost_usd"] = round(cost_usd, 10)
        if best is not None:
            fields["best_dev"] = round(best, 6)
        live.update(**fields)

    run.progress = progress
    return asyncio.run(run.run())


def _optimize_with_progress(prepared: Any, store: Any) -> Any:
    """The search under a live display: calls spent of the budget, best score, candidates alive, cost."""

    from studio.cli.progress import progress_bar
    from studio.optimize import optimize as run_optimize

    texts = ("best {task.fields[best]}", "alive {task.fields[alive]}", "${task.fields[cost]}", "{task.description}")
    total = prepared.options.budget_calls
    with progress_bar("calls", texts, total=total, description="starting", best="-", alive="-", cost="0") as bar:

        def progress(*, event: str, best: float | None, calls: int = 0, cost_usd: float = 0.0, **details: Any) -> None:
            fields: dict[str, Any] = {"completed": calls, "cost": f"{cost_usd:.4f}"}
            if best is not None:
                fields["best"] = f"{best:.3f} ({details.get('best_id')})"
            if details.get("alive") is not None:
                fields["alive"] = str(details["alive"])
            if details.get("message"):
                fields["description"] = details["message"]
                if event in PRINTED:
                    bar.print(details["message"])
            bar.update(**fields)

        return asyncio.run(run_optimize(prepared, store, progress=progress))
