"""`serve`: flows as an HTTP service (the `serve` extra: fastapi, uvicorn)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from studio.cli.common import db_option, durability_option, friendly, http_client_options
from studio.serve import DEFAULT_HOST, DEFAULT_MAX_RUNS, DEFAULT_PORT

F = TypeVar("F", bound=Callable[..., Any])


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
    "--max-concurrency",
    type=click.IntRange(1),
    default=DEFAULT_MAX_RUNS,
    show_default=True,
    help="Runs executing at once; more wait for a slot.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Server processes on the one port and store (each runs --max-concurrency runs); a worker that dies is replaced.",
)
@click.option(
    "--published", is_flag=True, help="Serve each flow's version tagged prod (else its newest published), not its file."
)
@click.option(
    "--allow-model",
    "allow_models",
    multiple=True,
    metavar="PATTERN",
    help="Models a request may swap in besides the flow's own (fnmatch, e.g. 'openai/gpt-4o*'). Repeatable.",
)
@durability_option(
    "When a run's finished steps reach the store, for flows whose file names no `durability:`:"
    " sync (default), async or exit (see `flowstudio run --help`)."
)
@http_client_options(token_scope="every request but /healthz")
@friendly
def serve(
    path: str,
    host: str,
    port: int,
    db: str | None,
    token_env: str | None,
    max_concurrency: int,
    allow_hosts: tuple[str, ...],
    allow_models: tuple[str, ...],
    max_body_bytes: int,
    published: bool,
    durability: str | None,
    workers: int,
) -> None:
    """Serve a flow file, or every flow of a folder, over HTTP; prints the URL.

    Example: flowstudio serve flows/ --port 8000 --allow-model 'openai/gpt-4o*'
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
        allow_hosts=allow_hosts,
        allow_models=allow_models,
        max_body_bytes=max_body_bytes,
        announce=_announce,
        published=published,
        durability=durability,  # type: ignore[arg-type]  # click.Choice checked it
        workers=workers,
    )


def _announce(line: str) -> None:
    click.echo(line)
    sys.stdout.flush()
