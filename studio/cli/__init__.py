"""`flowstudio`: a thin click layer over the library. JSON for scripts, tables for people.

Exit codes: 0 ok, 1 the flow failed, 2 bad input, 3 the run is waiting for human input.
Heavy imports (pydantic models, litellm, the local model) happen inside commands, so
`flowstudio --help` starts fast. One module per command group; this one assembles them.
"""

from __future__ import annotations

import click

from studio.cli import (
    blame,
    cascade,
    database,
    evaluate,
    export,
    flows,
    importing,
    index,
    launch,
    mcp,
    models,
    optimize,
    reviews,
    running,
    runs,
    serve,
    versions,
)
from studio.cli.hardening import GuardedGroup


@click.group(cls=GuardedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="flowstudio")
def main() -> None:
    """Build, run and trace LLM workflows written as YAML flows.

    Example: flowstudio run flows/ticket-triage.yaml -i ticket="I was charged twice"
    """


for command in (
    flows.validate,
    flows.fmt,
    flows.schema,
    running.run,
    running.resume,
    running.rerun,
    runs.runs,
    runs.trace,
    models.models,
    evaluate.batch,
    evaluate.experiments,
    optimize.optimize,
    blame.blame,
    launch.studio,
    index.index,
    export.export,
    mcp.mcp,
    serve.serve,
    database.db_group,
    importing.import_group,
    versions.publish,
    versions.versions,
    versions.tag,
    versions.untag,
    versions.diff,
    versions.promote,
    reviews.review,
    reviews.dataset,
    cascade.cascade_group,
):
    main.add_command(command)

__all__ = ["main"]
