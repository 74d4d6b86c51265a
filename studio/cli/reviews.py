"""`review` and `dataset from-reviews`: feedback on runs, and the datasets it makes."""

from __future__ import annotations

import click

from studio.cli.common import db_option, friendly, json_option, open_store, pairs, print_json


@click.command()
@click.argument("run_id")
@click.option("--verdict", type=click.Choice(["good", "bad"]), default=None, help="The run was right or wrong.")
@click.option("--score", type=float, default=None, help="A score from 0 (bad) to 1 (good), instead of a verdict.")
@click.option("--expect", multiple=True, metavar="OUTPUT=VALUE", help="The output it should have given (repeatable).")
@click.option("--comment", default=None, help="Why, in words: the optimizer reads it.")
@click.option("--node", default=None, help="The node to blame.")
@click.option(
    "--author", default=None, help="Who reviews (default: the user running it, as $LOGNAME or $USER name it)."
)
@db_option
@json_option
@friendly
def review(
    run_id: str,
    verdict: str | None,
    score: float | None,
    expect: tuple[str, ...],
    comment: str | None,
    node: str | None,
    author: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Record feedback on a run: a verdict or score, corrected outputs, a comment, a blamed node.

    RUN_ID may be any unique prefix of a run id.

    Example: flowstudio review 3f2a --verdict bad --expect category=billing --comment "asks for a refund"
    """
    from studio.errors import InputError
    from studio.reviews.feedback import feedback_row
    from studio.reviews.feedback import review as record_review
    from studio.store.base import resolve_id

    store = open_store(db)
    try:
        full = resolve_id(store, "run", run_id)
        try:
            record = record_review(
                store, full, verdict=verdict, score=score, correction=pairs(expect, "--expect", True),  # type: ignore[arg-type]
                comment=comment, author=author or _account(), node=node,
            )  # fmt: skip
        except InputError as err:
            raise InputError(err.message, field=_option(err.field)) from None
    finally:
        store.close()
    if as_json:
        print_json(feedback_row(record))
    else:
        judged = record.value if record.value is not None else record.score
        fixed = f", corrected {', '.join(record.correction)}" if record.correction else ""
        click.echo(f"reviewed {full}: {judged if judged is not None else 'no verdict'}{fixed}")


def _option(field: str | None) -> str | None:
    """The CLI's word for a review field."""
    if field and field.startswith("correction."):
        return f"--expect {field.removeprefix('correction.')}"
    return {"score": "--score", "verdict": "--verdict", "comment": "--comment", "node": "--node"}.get(
        field or "", field
    )


@click.group("dataset")
def dataset() -> None:
    """Datasets made from recorded runs.

    Example: flowstudio dataset from-reviews ticket-triage --out reviewed.jsonl
    """


@dataset.command("from-reviews")
@click.argument("flow")
@click.option("--version", default=None, metavar="ID", help="Only runs of this flow version (an id or its beginning).")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="The JSONL file to write.")
@db_option
@json_option
@friendly
def from_reviews(flow: str, version: str | None, out: str, db: str | None, as_json: bool) -> None:
    """Write a flow's reviewed runs as a batch dataset: inputs, corrected or confirmed outputs, run id.

    Runs with the same inputs make one row (the newest review wins); a bad verdict without a
    correction makes none.

    Example: flowstudio dataset from-reviews ticket-triage --out reviewed.jsonl
    """
    from studio.reviews.dataset import reviewed_rows, write_jsonl

    store = open_store(db)
    try:
        rows = reviewed_rows(store, flow, version.lower() if version else None)
    finally:
        store.close()
    count = write_jsonl(rows, out)
    if as_json:
        print_json({"flow": flow, "rows": count, "out": out})
    else:
        click.echo(f"wrote {count} reviewed row{'' if count == 1 else 's'} of {flow} to {out}")


def _account() -> str | None:
    from studio.versions.history import account_name

    return account_name()
