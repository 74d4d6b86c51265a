"""A small MCP server for the tests, on the official SDK: `python server.py stdio` or `... http PORT`.

With CANARY set, it writes that file first thing, so a test can tell whether it ever started.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

if os.environ.get("CANARY"):
    Path(os.environ["CANARY"]).write_text(str(os.getpid()))

from mcp.server.mcpserver import Context, MCPServer

LISTINGS = [0]


class CountingServer(MCPServer):
    """Counts how often its tool list is read."""

    async def list_tools(self) -> Any:
        LISTINGS[0] += 1
        return await super().list_tools()


server = CountingServer("test-tools")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def listings() -> int:
    """How often the tool list was read since the server started."""
    return LISTINGS[0]


@server.tool()
def env(name: str) -> str:
    """The value of an environment variable of the server."""
    return os.environ.get(name, "")


@server.tool()
async def header(name: str, ctx: Context) -> str:
    """The value of a header of the HTTP request (empty over stdio)."""
    return (ctx.headers or {}).get(name.lower(), "")


@server.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(reason)


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        import uvicorn

        app = server.streamable_http_app()
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
