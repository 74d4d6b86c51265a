"""`index`: build a full-text search table for `retrieve.fts`."""

from __future__ import annotations

from pathlib import Path

import click

from studio.cli.common import (
    friendly,
    json_option,
    print_json,
)


@click.command()
@click.argument("directory", type=click.Path(file_okay=False, exists=True))
@click.option("--table", required=True, help="Name of the document table to (re)build.")
@click.option(
    "--db",
    type=click.Path(dir_okay=False),
    default="documents.db",
    show_default=True,
    help="SQLite file for the table (retrieve.fts reads it with `db:`).",
)
@click.option("--chunk-chars", type=click.IntRange(100), default=1000, show_default=True, help="Longest passage.")
@json_option
@friendly
def index(directory: str, table: str, db: str, chunk_chars: int, as_json: bool) -> None:
    """Build a full-text search table from the .txt and .md files under DIRECTORY, for retrieve.fts.

    The table is replaced, one row per passage. A symbolic link is followed only when it stays inside
    DIRECTORY; one that leads out of it is refused. Example: flowstudio index docs/ --table handbook --db docs.db
    """
    import re

    from nodes.retrieve_fts import index_directory
    from studio.errors import InputError
    from studio.flow.paths import PathRefused
    from studio.store.light import sqlite_utils

    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", table):
        raise InputError(f"table name {table!r} must be letters, digits and underscores", field="--table")
    root = Path(directory).resolve()
    _refuse_links_out(root)
    Path(db).parent.mkdir(parents=True, exist_ok=True)
    try:
        with sqlite_utils.Database(db) as database:
            rows = index_directory(database, table, Path(directory), chunk_chars, root)
    except PathRefused as err:
        raise InputError(str(err), field="DIRECTORY") from None
    if as_json:
        print_json({"db": db, "table": table, "passages": rows})
    else:
        click.echo(f"indexed {rows} passages from {directory} into {db} (table {table})")


def _refuse_links_out(folder: Path) -> None:
    """Raise InputError for the first symbolic link under `folder` that leads out of it."""
    from studio.errors import InputError

    for path in sorted(folder.rglob("*")):
        if not path.is_symlink():
            continue
        real = path.resolve()
        if real != folder and folder not in real.parents:
            raise InputError(
                f"{path} links to {real}, outside the folder being indexed ({folder}); "
                "a link is followed only within it",
                field="DIRECTORY",
            )
