"""`mcp serve`: flows as MCP tools."""

from __future__ import annotations

import click

from studio.cli.common import db_option, friendly


@click.group()
def mcp() -> None:
    """The Model Context Protocol: serve flows as MCP tools.

    Example: flowstudio mcp serve flows --transport http --port 8765
    """


@mcp.command()
@click.argument("path", type=click.Path(exists=True))
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="With http.")
@click.option("--host", default="127.0.0.1", show_default=True, help="With http: the interface to bind.")
@db_option
@friendly
def serve(path: str, transport: str, port: int, host: str, db: str | None) -> None:
    """Expose each flow under PATH (a file or a folder) as an MCP tool; every call is a stored run.

    Example: flowstudio mcp serve flows/ticket-triage.yaml --transport stdio
    """
    import anyio

    try:
        from studio.serve import mcp_server
    except ImportError:
        raise click.ClickException("the MCP server needs the mcp extra: pip install 'flowstudio[mcp]'") from None
    from pathlib import Path

    tools = mcp_server.load_tools(Path(path))
    server = mcp_server.build_server(tools, db)
    if transport == "stdio":
        anyio.run(mcp_server.serve_stdio, server)
    else:
        click.echo(f"serving {len(tools)} flow(s) as MCP tools at http://{host}:{port}/mcp", err=True)
        mcp_server.serve_http(server, host, port)
