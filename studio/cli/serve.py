"""`serve`: flows as an HTTP service (the `serve` extra: fastapi, uvicorn)."""

from __future__ import annotations

import sys

import click

from studio.cli.common import db_option, friendly
from studio.serve import DEFAULT_HOST, DEFAULT_MAX_RUNS, DEFAULT_PORT


@click.command()
@click.argument("path", type=click.Path(exists=True))
@click.option(
    "--host", default=DEFAULT_HOST, show_default=True, help="Address to bind; a non-loopback one needs --token-env."
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True, help="Port (0: any free one)."
)
@db_option
@click.option(
    "--token-env",
    metavar="NAME",
    default=None,
    help="Require `Authorization: Bearer $NAME` on every request but /healthz.",
)
@click.option(
    "--max-concurrency",
    type=click.IntRange(1),
    default=DEFAULT_MAX_RUNS,
    show_default=True,
    help="Runs executing at once; more wait for a slot.",
)
@friendly
def serve(path: str, host: str, port: int, db: str | None, token_env: str | None, max_concurrency: int) -> None:
    """Serve a flow file, or every flow of a folder, over HTTP; prints the URL.

    Example: flowstudio serve flows/ --port 8000
    """
    try:
        from studio.serve import server
    except ImportError as err:
        raise click.ClickException(f"{err.name} is missing: pip install 'flowstudio[serve]'") from None
    server.serve(
        path,
        host=host,
        port=port,
        db=db,
        token_env=token_env,
        max_concurrency=max_concurrency,
        announce=_announce,
    )


def _announce(line: str) -> None:
    click.echo(line)
    sys.stdout.flush()
