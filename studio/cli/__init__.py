"""`flowstudio`: a thin click layer over the library. JSON for scripts, tables for people.

Exit codes: 0 ok, 1 the flow failed, 2 bad input, 3 the run is waiting for human input.
Heavy imports (pydantic models, litellm, the local model) happen inside commands, so
`flowstudio --help` starts fast. One module per command group; this one assembles them.
"""

from __future__ import annotations

import click

from studio.cli.hardening import GuardedGroup

COMMANDS = {
    "validate": "flows:validate",
    "fmt": "flows:fmt",
    "schema": "flows:schema",
    "run": "running:run",
    "resume": "running:resume",
    "rerun": "running:rerun",
    "runs": "runs:runs",
    "trace": "runs:trace",
    "models": "models:models",
    "batch": "evaluate:batch",
    "experiments": "evaluate:experiments",
    "optimize": "optimize:optimize",
    "blame": "blame:blame",
    "studio": "launch:studio",
    "index": "index:index",
    "export": "export:export",
    "mcp": "mcp:mcp",
    "serve": "serve:serve",
    "db": "database:db_group",
    "import": "importing:import_group",
    "publish": "versions:publish",
    "versions": "versions:versions",
    "tag": "versions:tag",
    "untag": "versions:untag",
    "diff": "versions:diff",
    "promote": "versions:promote",
    "review": "reviews:review",
    "dataset": "reviews:dataset",
    "cascade": "cascade:cascade_group",
}
"""Each command, as `MODULE:ATTRIBUTE` under `studio.cli`: imported when it is called (or listed
by `--help`), so `flowstudio validate` loads the validate command's module and not the others'."""


@click.group(cls=GuardedGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="flowstudio")
def main() -> None:
    """Build, run and trace LLM workflows written as YAML flows.

    Example: flowstudio run flows/ticket-triage.yaml -i ticket="I was charged twice"
    """


__all__ = ["COMMANDS", "main"]
