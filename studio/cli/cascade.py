"""`flowstudio cascade report FLOW`: how a flow's cascades escalate, cost and score over time."""

from __future__ import annotations

import click

from studio.cli.common import db_option, friendly, json_option, open_store, print_json


@click.group("cascade")
def cascade_group() -> None:
    """Cascades (`strategy: cascade`): a cheap student that learns from a teacher model."""


@cascade_group.command("report")
@click.argument("flow")
@click.option(
    "--window", type=click.IntRange(1), default=50, show_default=True, help="Calls per line of escalation over time."
)
@click.option("--node", default=None, help="Only this node's calls.")
@db_option
@json_option
@friendly
def report(flow: str, window: int, node: str | None, db: str | None, as_json: bool) -> None:
    """Escalation rate over time, cost per call, accuracy on reviewed runs and the break-even point
    of FLOW's cascade nodes (FLOW: the flow's name, or its file).

    Example: flowstudio cascade report ticket-triage --window 100
    """
    from studio.evaluate.cascade import lines
    from studio.evaluate.cascade import report as make_report
    from studio.runtime.memory import book_for

    name = _flow_name(flow)
    store = open_store(db)
    try:
        decisions = [d for d in book_for(store).decisions(name) if node in (None, d.node)]
        made = make_report(name, decisions, store.feedback_of_flow(name), window)
    finally:
        store.close()
    if as_json:
        print_json(made.as_json())
    else:
        click.echo("\n".join(lines(made)))


def _flow_name(flow: str) -> str:
    """A flow's name: the argument itself, or the `name` of the flow file it names."""
    if flow.endswith((".yaml", ".yml")):
        from studio.flow.spec import load_flow

        return load_flow(flow).spec.name
    return flow


@cascade_group.command("seed")
@click.argument("flow", type=click.Path(dir_okay=False))
@click.option("--from-reviews", is_flag=True, required=True, help="Keep the reviewed runs' answers (required for now).")
@db_option
@json_option
@friendly
def seed(flow: str, from_reviews: bool, db: str | None, as_json: bool) -> None:
    """Seed FLOW's cascade memories from its reviewed runs: a good run's answers, or the reviewer's
    correction of an output reading a cascade node, kept as teacher answers.

    Example: flowstudio cascade seed flows/ticket-triage.yaml --from-reviews
    """
    from studio.flow.spec import load_flow
    from studio.reviews.cascade_seed import cascade_nodes, seed_from_reviews
    from studio.runtime.compiler import compile_flow

    plan = compile_flow(load_flow(flow))
    store = open_store(db)
    try:
        done = seed_from_reviews(store, plan)
    finally:
        store.close()
    if as_json:
        print_json({"flow": plan.flow.spec.name, "runs": done.runs, "examples": done.examples})
        return
    nodes = ", ".join(cascade_nodes(plan)) or "none (no node has `strategy: cascade`)"
    click.echo(
        f"seeded {done.examples} answer(s) from {done.runs} reviewed run(s) of {plan.flow.spec.name}; nodes: {nodes}"
    )
