"""`db migrate`: copy a SQLite store into PostgreSQL and check the counts."""

from __future__ import annotations

import sys

import click

from studio.cli.common import EXIT_FAILED, friendly, json_option, print_json


@click.group(name="db")
def db_group() -> None:
    """Manage stores: copy a SQLite store into PostgreSQL.

    Example: flowstudio db migrate --from sqlite:.flowstudio/flowstudio.db --to postgresql://localhost/flowstudio
    """


@db_group.command()
@click.option("--from", "source", required=True, metavar="sqlite:PATH", help="The SQLite store to copy.")
@click.option("--to", "target", required=True, metavar="postgresql://...", help="The PostgreSQL store to fill.")
@json_option
@friendly
def migrate(source: str, target: str, as_json: bool) -> None:
    """Copy runs, steps, model calls, the cache, experiments and versions; print each table's
    counts and exit 1 when the target lacks rows. Runs the target already has are skipped.

    Example: flowstudio db migrate --from sqlite:.flowstudio/flowstudio.db --to postgresql://localhost/flowstudio
    """
    from pathlib import Path

    from studio.errors import InputError
    from studio.store import is_url, open_store, shown
    from studio.store.migrate import copy_store
    from studio.store.postgres import PostgresStore
    from studio.store.sqlite import SQLiteStore

    path = Path(source.removeprefix("sqlite:"))
    if not path.is_file():
        raise InputError(f"--from: no SQLite store at {path} (give sqlite:PATH)", field="--from")
    if not is_url(target):
        raise InputError(f"--to: {shown(target)} is not a postgresql:// URL", field="--to")
    origin, destination = SQLiteStore(path, group_commit=False), open_store(target)
    assert isinstance(destination, PostgresStore)
    try:
        found = copy_store(origin, destination)
    finally:
        origin.close()
        destination.close()
    if as_json:
        print_json([{"table": c.table, "source": c.source, "target": c.target} for c in found])
    else:
        for count in found:
            mark = "ok" if count.matches else "MISSING"
            click.echo(f"{count.table:<12} {count.source:>8} -> {count.target:>8}  {mark}")
    if not all(count.matches for count in found):
        click.echo("error: the target lacks rows the source has", err=True)
        sys.exit(EXIT_FAILED)
