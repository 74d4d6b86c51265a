"""`import promptflow`, `import promptflow-run` and `import dify`: other tools' flows as flow files."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from studio.cli.common import EXIT_BAD_INPUT, friendly, pairs

if TYPE_CHECKING:
    from studio.importers import Imported


@click.group(name="import")
def import_group() -> None:
    """Turn a Prompt flow folder or a Dify DSL file into a flow file (plus its layout), with a report.

    Example: flowstudio import promptflow my-pf-flow/ --out flows/my-flow.yaml
    """


def _finish(imported: Imported, out: Path, allow_placeholders: bool, force: bool) -> None:
    from studio.importers import write_import

    for line in imported.report.lines():
        click.echo(line)
    if not imported.report.complete and not allow_placeholders:
        click.echo("error: some nodes could not be converted; nothing written (--allow-placeholders writes "
                   "the flow with a failing placeholder for each)", err=True)  # fmt: skip
        sys.exit(EXIT_BAD_INPUT)
    for path in write_import(imported, out, overwrite=force):
        click.echo(f"wrote {path}")
    if imported.report.complete:
        click.echo(f"check it: flowstudio validate {out}")


_out = click.option("--out", type=click.Path(dir_okay=False), help="Flow file to write (default: NAME.yaml here).")
_force = click.option("--force", is_flag=True, help="Replace files the import would write that exist already.")
_placeholders = click.option(
    "--allow-placeholders",
    is_flag=True,
    help="Write the flow even when nodes are not converted, each as a failing node.",
)


@import_group.command(name="promptflow")
@click.argument("source", type=click.Path(exists=True))
@_out
@_placeholders
@_force
@friendly
def promptflow(source: str, out: str | None, allow_placeholders: bool, force: bool) -> None:
    """Import a Prompt flow folder (its flow.dag.yaml, Jinja prompts and Python tools). Nothing in it runs.

    Example: flowstudio import promptflow web-classification/ --out flows/web-classification.yaml
    """
    from studio.importers import import_promptflow

    imported = import_promptflow(Path(source), allow_placeholders=allow_placeholders)
    _finish(imported, Path(out or f"{imported.flow['name']}.yaml"), allow_placeholders, force)


@import_group.command(name="promptflow-run")
@click.argument("data", type=click.Path(dir_okay=False))
@click.option("--column-mapping", "mapping", multiple=True, help="INPUT=${data.COLUMN}, as given to `pf run create`.")
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="Dataset (JSONL) to write.")
@_force
@friendly
def promptflow_run(data: str, mapping: tuple[str, ...], out: str, force: bool) -> None:
    """Keep a Prompt flow batch run's data and column mapping as a dataset for `flowstudio batch`.

    Example: flowstudio import promptflow-run data.jsonl --column-mapping url='${data.url}' --out flows/data/web.jsonl
    """
    from studio.importers import import_promptflow_run

    rows = import_promptflow_run(
        Path(data), pairs(mapping, "--column-mapping", parse_json=False), Path(out), overwrite=force
    )
    click.echo(f"wrote {out}: {rows} rows")


@import_group.command(name="dify")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@_out
@_placeholders
@_force
@friendly
def dify(source: str, out: str | None, allow_placeholders: bool, force: bool) -> None:
    """Import a Dify DSL app (workflow or advanced-chat); node positions go to the layout file.

    Example: flowstudio import dify support-bot.yml --out flows/support-bot.yaml
    """
    from studio.importers import import_dify

    imported = import_dify(Path(source), allow_placeholders=allow_placeholders)
    _finish(imported, Path(out or f"{imported.flow['name']}.yaml"), allow_placeholders, force)
