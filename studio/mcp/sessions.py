"""The MCP connections of one run, on the official `mcp` SDK (imported only when a run needs it).

A server is connected when a node first needs it, once per run however many nodes use it;
its tool list is read then and kept for the run. Each connection lives in its own task
(the SDK's transports hold anyio task groups that must close where they opened), and calls
from the nodes' tasks go through its session. `close()` ends them all when the run ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import IO, Any

from studio.errors import NodeError
from studio.mcp.spec import McpResult, McpServer, McpTool, env_name, refuse_command

MASK = "***"
_LIST_PAGES = 20


def _resolve(values: dict[str, str], secrets: set[str], what: str) -> dict[str, str]:
    """`$env.NAME` values read from the environment (and remembered as secrets to mask)."""
    resolved = {}
    for name, value in values.items():
        variable = env_name(value)
        if variable is None:
            resolved[name] = value
            continue
        if variable not in os.environ:
            raise NodeError(
                f"environment variable {variable} is not set (MCP {what} {name} reads {value})", kind="auth"
            )
        resolved[name] = os.environ[variable]
        if resolved[name]:
            secrets.add(resolved[name])
    return resolved


class _Connection:
    """One open MCP session, held by its own task until the run closes it."""

    def __init__(self, server: McpServer, cwd: Path, secrets: set[str]) -> None:
        self.server = server
        self.cwd = cwd
        self.secrets = secrets
        self.client: Any = None
        self.tools: list[Any] = []
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._errlog: IO[str] | None = None

    async def open(self) -> None:
        self._task = asyncio.create_task(self._hold(), name=f"mcp {self.server.label}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), self.server.timeout_s)
        except TimeoutError:
            await self.close()
            raise NodeError(
                f"MCP server {self.server.label} did not answer within {self.server.timeout_s:g} s", kind="timeout"
            ) from None
        except NodeError:
            await self.close()
            raise
        except Exception as err:
            await self.close()
            raise NodeError(
                f"cannot connect to MCP server {self.server.label}: {_reason(err)}{self._stderr()}", kind="mcp_connect"
            ) from None

    def _transport(self, stack: AsyncExitStack) -> Any:
        server = self.server
        if server.url is not None:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = _resolve(server.headers, self.secrets, "header")
            timeout = httpx2.Timeout(server.timeout_s, read=max(server.timeout_s, 300.0))
            http = httpx2.AsyncClient(headers=headers, timeout=timeout)
            stack.push_async_callback(http.aclose)
            return streamable_http_client(server.url, http_client=http)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        refused = refuse_command(server)  # checked at validate too; the user's list may have changed since
        if refused:
            raise NodeError(refused, kind="blocked")
        env = _resolve(server.env, self.secrets, "env")
        assert server.command is not None
        params = StdioServerParameters(command=server.command, args=list(server.args), env=env, cwd=self.cwd)
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        return stdio_client(params, errlog=self._errlog)

    async def _hold(self) -> None:
        from mcp import Client

        try:
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(Client(self._transport(stack), cache=None))
                self.tools = await _list_all(client)
                self.client = client
                self._ready.set_result(None)
                await self._closing.wait()
        except BaseException as err:
            if not self._ready.done():
                self._ready.set_exception(err if isinstance(err, Exception) else RuntimeError(repr(err)))
            if not isinstance(err, Exception):
                raise

    def _stderr(self) -> str:
        if self._errlog is None:
            return ""
        self._errlog.seek(0)
        tail = self._errlog.read()[-500:].strip()
        return f" (its stderr: {tail})" if tail else ""

    async def close(self) -> None:
        self._closing.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, 5.0)
            except (TimeoutError, Exception):
                self._task.cancel()
                with contextlib.suppress(BaseException):
                    await self._task
        if self._errlog is not None:
            self._errlog.close()


async def _list_all(client: Any) -> list[Any]:
    tools, cursor = [], None
    for _ in range(_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _reason(err: BaseException) -> str:
    """The innermost useful message (the SDK wraps transport errors in exception groups)."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return f"{type(err).__name__}: {err}"


class McpSessions:
    """The MCP sessions of one run: one per server, opened on first use, closed with the run."""

    def __init__(self) -> None:
        self._connections: dict[str, _Connection] = {}
        self._lock = asyncio.Lock()
        self.secrets: set[str] = set()
        """Every `$env` value sent to a server, masked in what comes back."""

    async def _connection(self, server: McpServer, cwd: Path) -> _Connection:
        async with self._lock:
            key = server.key()
            if key not in self._connections:
                connection = _Connection(server, cwd, self.secrets)
                await connection.open()
                self._connections[key] = connection
            return self._connections[key]

    async def tools(self, server: McpServer, cwd: Path) -> list[McpTool]:
        """The server's tools (its allowlist applied, names prefixed), read once per run."""
        connection = await self._connection(server, cwd)
        listed = {t.name: t for t in connection.tools}
        missing = sorted(set(server.tools or ()) - set(listed))
        if missing:
            raise NodeError(
                f"MCP server {server.label} has no tool {missing[0]!r}; it lists {sorted(listed)}", kind="bad_config"
            )
        names = server.tools if server.tools is not None else list(listed)
        return [
            McpTool(
                name=server.prefix + name,
                remote=name,
                description=listed[name].description or "",
                input_schema=dict(listed[name].input_schema or {}),
                server=server.label,
                source=server,
            )
            for name in names
        ]

    async def call(self, server: McpServer, tool: str, arguments: dict[str, Any], cwd: Path) -> McpResult:
        """Call `tool` (its name on the server); raises NodeError on a failure to call, not on `is_error`."""
        connection = await self._connection(server, cwd)
        allowed = server.tools if server.tools is not None else [t.name for t in connection.tools]
        if tool not in allowed:
            raise NodeError(f"MCP server {server.label} offers no tool {tool!r}; tools: {allowed}", kind="bad_input")
        start = time.perf_counter()
        try:
            result = await asyncio.wait_for(
                connection.client.call_tool(tool, arguments, read_timeout_seconds=server.timeout_s), server.timeout_s
            )
        except TimeoutError:
            raise NodeError(f"MCP tool {tool!r} timed out after {server.timeout_s:g} s", kind="timeout") from None
        except Exception as err:
            raise NodeError(self.mask(f"MCP tool {tool!r} failed: {_reason(err)}"), kind="tool_error") from None
        latency = time.perf_counter() - start
        text = "\n".join(getattr(block, "text", "") for block in result.content if getattr(block, "type", "") == "text")
        data: Any = result.structured_content
        if data is None:
            try:
                data = json.loads(text)
            except ValueError:
                data = text
        return McpResult(text=self.mask(text), data=self.mask(data), is_error=bool(result.is_error), latency_s=latency)

    def mask(self, value: Any) -> Any:
        """`value` with every secret sent to a server replaced by ***."""
        if not self.secrets:
            return value
        if isinstance(value, str):
            for secret in self.secrets:
                value = value.replace(secret, MASK)
            return value
        if isinstance(value, list):
            return [self.mask(v) for v in value]
        if isinstance(value, dict):
            return {k: self.mask(v) for k, v in value.items()}
        return value

    async def close(self) -> None:
        """End every session (stdio servers stop)."""
        connections, self._connections = list(self._connections.values()), {}
        for connection in connections:
            await connection.close()
