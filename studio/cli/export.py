"""`export`: write a flow as an installable Python package."""

from __future__ import annotations

import sys

import click

from studio.cli.common import (
    EXIT_FAILED,
    friendly,
    json_option,
    print_json,
)


@click.command()
@click.argument("flow", type=click.Path(dir_okay=False), metavar="FLOW | NAME@TAG | NAME@ID")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Directory to write the package into.")
@click.option("--name", default=None, help="Import name of the package (default: the flow name, - as _).")
@click.option(
    "--test-script",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="A scripted-model file for the package's test (default: every call answers `Answer: ok`).",
)
@click.option("--force", is_flag=True, help="Write into a non-empty --out, replacing the files export writes.")
@click.option(
    "--engine-wheel/--no-engine-wheel",
    default=True,
    help="Build the flowstudio wheel into OUT/wheels, so the package installs where flowstudio is on no index.",
)
@json_option
@friendly
def export(
    flow: str, out: str, name: str | None, test_script: str | None, force: bool, engine_wheel: bool, as_json: bool
) -> None:
    """Write FLOW as an installable Python package: typed run() API, console script, README, test.

    The package depends on flowstudio without the studio extra; the flowstudio wheel is built beside
    it (OUT/wheels) and the install command printed. Example: flowstudio export flows/ticket-triage.yaml --out dist/ticket-triage
    """
    from studio.cli.versions import flow_and_version
    from studio.export import export_flow
    from studio.export.engine_wheel import build_engine_wheel, install_command
    from studio.versions import refs

    if refs.parse(flow) is not None:  # NAME@TAG / NAME@ID: the published snapshot
        flow = flow_and_version(flow, None)[0]
    done = export_flow(flow, out, name=name, test_script=test_script, force=force)
    wheel = None
    if engine_wheel:
        try:
            wheel = build_engine_wheel(done.out)
        except RuntimeError as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(EXIT_FAILED)
        if wheel is None:
            done.notes.append("flowstudio runs from an installed wheel, not a source tree: no engine wheel was built")
    install = install_command(done.out, wheel, extras=done.extras, then=done.after_install)
    if as_json:
        body = {
            "out": str(done.out),
            "package": done.package,
            "distribution": done.distribution,
            "script": done.distribution,
            "files": [p.as_posix() for p in done.files],
            "notes": done.notes,
            "engine_wheel": str(wheel) if wheel else None,
            "install": install,
        }
        print_json(body)
        return
    click.echo(f"wrote {done.distribution} (import {done.package}) to {done.out}: {len(done.files)} files")
    for note in done.notes:
        click.echo(f"note: {note}", err=True)
    if wheel is not None:
        click.echo(f"built the engine's wheel beside it: {wheel}")
    click.echo(f"install it with: {install}")
