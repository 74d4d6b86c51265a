"""`publish`, `versions`, `tag`, `untag`, `diff` and `promote`: published flow versions.

`NAME@TAG` and `NAME@ID` (a unique beginning of the id) name a published version wherever a
flow file is named (`run`, `batch`, `optimize`, `export`, `diff`): `flow_and_version` turns one into the flow file
of its snapshot, written once under `.flowstudio/versions/ID/` beside the store.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import click

from studio.cli.common import EXIT_FAILED, db_option, friendly, json_option, open_store, pairs, print_json


def flow_and_version(text: str, db: str | None) -> tuple[str, str | None]:
    """The flow file `text` names and the version id its runs record: a reference's snapshot and
    id; a file as given and its content hash (None when the file cannot be snapshotted)."""
    from studio.versions import refs, snapshot

    if refs.parse(text) is None:
        return text, snapshot.working_id(text)  # None: the command's own loading says what is wrong
    store = open_store(db)
    try:
        path, version = refs.flow_file(store, text)
    finally:
        store.close()
    return str(path), version


@click.command()
@click.argument("flow", type=click.Path(exists=True, dir_okay=False))
@click.option("--tag", default=None, help="Point this tag (e.g. prod, v1) at the version.")
@click.option("--note", default=None, help="What changed, kept with the version.")
@click.option(
    "--author", default=None, help="Who publishes (default: the user running it, as $LOGNAME or $USER name it)."
)
@db_option
@json_option
@friendly
def publish(flow: str, tag: str | None, note: str | None, author: str | None, db: str | None, as_json: bool) -> None:
    """Store the flow and every file it reads as an immutable version; its id is the content hash.

    Publishing unchanged content gives the same id.

    Example: flowstudio publish flows/ticket-triage.yaml --tag prod --note "shorter replies"
    """
    from studio.versions.history import publish as publish_flow

    store = open_store(db)
    try:
        done = publish_flow(store, flow, tag=tag, note=note, author=author)
    finally:
        store.close()
    if as_json:
        print_json(published_json(done))
    else:
        print_published(done)


def published_json(done: Any) -> dict[str, Any]:
    """What `publish --json` prints (and `optimize --publish --json` under `published`)."""
    version = done.version
    return {"version": version.version_id, "flow": version.flow, "tag": done.tag, "new": done.new,
            "author": version.author, "files": sorted(version.files), "notes": list(done.notes)}  # fmt: skip


def print_published(done: Any) -> None:
    """The id (and tag) a publish gave, for people; what the snapshot left out on stderr."""
    version = done.version
    state = "published" if done.new else "already published as"
    count = len(version.files)
    click.echo(f"{state} {version.flow}@{version.version_id[:12]} ({count} file{'s' if count != 1 else ''})")
    if done.tag:
        click.echo(f"tag {done.tag} -> {version.version_id[:12]}")
    for line in done.notes:
        click.echo(f"note: {line}", err=True)


@click.command()
@click.argument("name")
@db_option
@json_option
@friendly
def versions(name: str, db: str | None, as_json: bool) -> None:
    """List a flow's published versions, newest first: id, tags, time, note, batch scores.

    Example: flowstudio versions ticket-triage
    """
    from studio.errors import InputError
    from studio.versions.history import history

    store = open_store(db)
    try:
        rows = history(store, name)
    finally:
        store.close()
    if not rows and not as_json:
        raise InputError(f"flow {name!r} has no published version (flowstudio publish FILE)", field="NAME")
    if as_json:
        print_json(rows)
        return
    for row in rows:
        tags = ", ".join(row["tags"]) or "-"
        scores = " ".join(f"{b.get('metric')}={b['score']:.3f}" for b in row["batches"] if b.get("score") is not None)
        by = f"by {row['author']}  " if row.get("author") else ""
        click.echo(f"{row['version'][:12]}  {row['created_at'][:19].replace('T', ' ')}  [{tags}]  {by}"
                   f"{row['note'] or ''}  {scores}".rstrip())  # fmt: skip


@click.command()
@click.argument("reference", metavar="NAME@ID")
@click.argument("tag_name", metavar="TAG")
@db_option
@friendly
def tag(reference: str, tag_name: str, db: str | None) -> None:
    """Point TAG at a version (create or move it); moving `prod` to an older id rolls back.

    Example: flowstudio tag ticket-triage@3f2a9c1d prod
    """
    from studio.versions.history import check_tag

    check_tag(tag_name)
    store = open_store(db)
    try:
        version = _resolve(store, reference)
        old = next((t.version_id for t in store.list_tags(version.flow) if t.tag == tag_name), None)
        store.set_tag(version.flow, tag_name, version.version_id)
    finally:
        store.close()
    moved = f" (was {old[:12]})" if old and old != version.version_id else ""
    click.echo(f"tag {version.flow}@{tag_name} -> {version.version_id[:12]}{moved}")


@click.command()
@click.argument("reference", metavar="NAME@TAG")
@db_option
@friendly
def untag(reference: str, db: str | None) -> None:
    """Remove a tag (the version stays).

    Example: flowstudio untag ticket-triage@staging
    """
    from studio.errors import InputError
    from studio.versions import refs

    parsed = refs.parse(reference)
    if parsed is None:
        raise InputError(f"{reference!r} is not NAME@TAG", field="NAME@TAG")
    store = open_store(db)
    try:
        removed = store.remove_tag(parsed.flow, parsed.ref)
    finally:
        store.close()
    if not removed:
        raise InputError(f"flow {parsed.flow!r} has no tag {parsed.ref!r}", field="NAME@TAG")
    click.echo(f"removed tag {reference}")


@click.command()
@click.argument("a")
@click.argument("b")
@db_option
@json_option
@friendly
def diff(a: str, b: str, db: str | None, as_json: bool) -> None:
    """A semantic diff of two flows (files or NAME@TAG / NAME@ID): nodes added, removed, renamed,
    config fields changed (long text as a unified diff), wires, models, inputs, outputs.

    Example: flowstudio diff ticket-triage@prod flows/ticket-triage.yaml
    """
    from studio.flow.spec import load_flow
    from studio.versions.diff import diff_files, diff_flows, format_diff
    from studio.versions.snapshot import take

    path_a, _ = flow_and_version(a, db)
    path_b, _ = flow_and_version(b, db)
    flow_a, flow_b = load_flow(path_a), load_flow(path_b)
    result = diff_flows(flow_a, flow_b)
    files = diff_files(take(flow_a).digests, take(flow_b).digests)
    entry = take(flow_a).entry
    result["files"] = {key: [p for p in paths if p != entry] for key, paths in files.items()}
    if as_json:
        print_json({"a": a, "b": b, **result})
    else:
        click.echo("\n".join(format_diff(result)))


@click.command()
@click.argument("reference", metavar="NAME@ID")
@click.option("--tag", "tag_name", default="prod", show_default=True, help="The tag to move.")
@click.option("--data", required=True, type=click.Path(exists=True, dir_okay=False), help="The batch's dataset.")
@click.option(
    "--expect", multiple=True, required=True, metavar="OUTPUT=COLUMN", help="Compare an output with a column."
)
@click.option("--map", "map_inputs", multiple=True, metavar="INPUT=COLUMN", help="Feed a flow input from a column.")
@click.option("--metric", default=None, help="Metric (default exact).")
@click.option("--min-delta", type=click.FloatRange(0), default=None, help="How much worse the candidate may score.")
@click.option("--model", "models", multiple=True, metavar="ALIAS=MODEL", help="Swap a model alias in both batches.")
@db_option
@json_option
@friendly
def promote(reference: str, tag_name: str, data: str, expect: tuple[str, ...], map_inputs: tuple[str, ...],
            metric: str | None, min_delta: float | None, models: tuple[str, ...], db: str | None,
            as_json: bool) -> None:  # fmt: skip
    """Move a tag to a version only when a batch scores it no worse than the tag's current version
    (by more than --min-delta, else than the score's 95% interval); otherwise exit 1.

    Example: flowstudio promote ticket-triage@3f2a9c1d --tag prod --data triage.jsonl --expect category=label
    """
    from studio.evaluate.options import BatchOptions
    from studio.versions.promote import promote as promote_version
    from studio.versions.refs import cache_dir

    options = BatchOptions(flow="", data=data, expect=pairs(expect, "--expect", parse_json=False),
                           map_inputs=pairs(map_inputs, "--map", parse_json=False), metric=metric,
                           models=pairs(models, "--model", parse_json=False))  # fmt: skip
    store = open_store(db)
    try:
        candidate = _resolve(store, reference)
        run = promote_version(
            store, candidate, tag=tag_name, options=options, cache=cache_dir(store), min_delta=min_delta
        )
        decided = asyncio.run(run)
    finally:
        store.close()
    if as_json:
        print_json(decided.as_json())
    else:
        _print_promotion(decided)
    if not decided.promoted:
        sys.exit(EXIT_FAILED)


def _print_promotion(decided: Any) -> None:
    click.echo(f"candidate {decided.candidate.version}: {decided.candidate.score:.3f}")
    if decided.current is not None:
        click.echo(f"{decided.tag} {decided.current.version}: {decided.current.score:.3f}")
    verdict = f"promoted: {decided.tag} -> {decided.candidate.version}" if decided.promoted else "refused"
    click.echo(f"{verdict} ({decided.reason})")


def _resolve(store: Any, reference: str) -> Any:
    from studio.errors import InputError
    from studio.versions import refs

    parsed = refs.parse(reference)
    if parsed is None:
        raise InputError(f"{reference!r} is not NAME@ID or NAME@TAG", field="NAME@ID")
    return refs.resolve(store, parsed)


__all__ = [
    "diff",
    "flow_and_version",
    "print_published",
    "promote",
    "publish",
    "published_json",
    "tag",
    "untag",
    "versions",
]
