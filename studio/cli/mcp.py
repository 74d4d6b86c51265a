"""`mcp serve`: flows as MCP tools."""

from __future__ import annotations

import click

from studio.cli.common import db_option, durability_option, friendly, http_client_options


@click.group()
def mcp() -> None:
    """The Model Context Protocol: serve flows as MCP tools.

    Example: flowstudio mcp serve flows --transport http --port 8765
    """


@mcp.command()
@click.argument("path", type=click.Path(exists=True))
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="With http.")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="With http: the interface to bind; a non-loopback one needs --token-env.",
)
@http_client_options(within="With http: ")
@durability_option(
    "When a call's finished steps reach the store, for flows whose file names no `durability:`:"
    " sync (default), async or exit (see `flowstudio run --help`)."
)
@db_option
@friendly
def serve(
    path: str,
    transport: str,
    port: int,
    host: str,
    token_env: str | None,
    allow_hosts: tuple[str, ...],
    max_body_bytes: int,
    durability: str | None,
    db: str | None,
) -> None:
    """Expose each flow under PATH (a file or a folder) as an MCP tool; every call is a stored run.

    Example: flowstudio mcp serve flows/ticket-triage.yaml --transport stdio
    """
    import anyio

    try:
        from studio.serve import mcp_server
    except ImportError:
        raise click.ClickException("the MCP server needs the mcp extra: pip install 'flowstudio[mcp]'") from None
    from pathlib import Path

    from studio.serve.listen import read_token

    token = read_token(token_env, host) if transport == "http" else None
    tools = mcp_server.load_tools(Path(path))
    folder = Path(path).resolve()
    server = mcp_server.build_server(
        tools,
        db,
        folder if folder.is_dir() else folder.parent,
        durability,  # type: ignore[arg-type]  # click.Choice checked it
    )
    if transport == "stdio":
        anyio.run(mcp_server.serve_stdio, server)
    else:
        guard = mcp_server.Guard(token=token, allow_hosts=allow_hosts, max_body_bytes=max_body_bytes)

        def announce(url: str) -> None:
            click.echo(f"serving {len(tools)} flow(s) as MCP tools at {url}", err=True)

        mcp_server.serve_http(server, host, port, guard, announce)
