"""What every request passes before a route sees it: the Host and Origin check (against DNS
rebinding), the bearer token and the body size limit. Plain ASGI middleware, shared by
`flowstudio serve` and `flowstudio mcp serve --transport http`.

Refusals are JSON: `{"detail": MESSAGE}`, or OpenAI's `{"error": {"message", "type", "code"}}`
under `/v1/`, where OpenAI's clients read it.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from studio.serve import DEFAULT_MAX_BODY_BYTES

__all__ = ["DEFAULT_MAX_BODY_BYTES", "BearerAuth", "BodyLimit", "BodyTooLarge", "HostGuard", "Hosts"]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
OPEN_PATHS = frozenset({"/healthz"})
"""Paths answered without a token (never the flows, runs or docs)."""


async def refuse(scope: Scope, send: Send, status: int, message: str, code: str) -> None:
    """Answer `status` with a JSON message in the shape the path's clients expect."""
    if scope["path"].startswith("/v1/"):
        kind = "invalid_request_error" if status != 401 else "authentication_error"
        body: object = {"error": {"message": message, "type": kind, "code": code}}
    else:
        body = {"detail": message}
    headers = [(b"content-type", b"application/json")]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


def split_host(value: str) -> tuple[str, int | None]:
    """`example.com:8000` → ("example.com", 8000); `[::1]:80` → ("::1", 80); a bad port → -1."""
    parts = urlsplit(f"//{value}")
    try:
        port = parts.port
    except ValueError:
        port = -1
    return (parts.hostname or "").lower(), port


@dataclass(frozen=True)
class Hosts:
    """The names a client may call the server by: the bound address, loopback, and `--allow-host`."""

    names: frozenset[str]
    """Lower-case host names and IP addresses (IPv6 without brackets)."""

    @classmethod
    def of(cls, bound: str, allowed: Iterable[str] = ()) -> Hosts:
        extra = {split_host(entry)[0] or entry.lower() for entry in allowed}
        return cls(frozenset({bound.strip("[]").lower(), *LOOPBACK_NAMES, *extra}))

    def allows(self, value: str, port: int | None) -> bool:
        """Whether a `Host` value (name and optional port) names this server."""
        name, given = split_host(value)
        return name in self.names and (given is None or port is None or given == port)

    def sdk_hosts(self, port: int) -> list[str]:
        """The same rule in the MCP SDK's `allowed_hosts` form."""
        shown = [f"[{n}]" if ":" in n else n for n in sorted(self.names)]
        return [f"{n}:{port}" for n in shown] + shown

    def sdk_origins(self, port: int) -> list[str]:
        """The same rule in the MCP SDK's `allowed_origins` form."""
        return [f"{scheme}://{host}" for host in self.sdk_hosts(port) for scheme in ("http", "https")]


class HostGuard:
    """Refuses (403) a request whose `Host`, or `Origin` when present, is not one of the server's names:
    a page that rebinds its own name to 127.0.0.1 still sends its name."""

    def __init__(self, app: ASGIApp, hosts: Hosts) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        port = (scope.get("server") or (None, None))[1]
        host = headers.get(b"host", b"").decode("latin-1")
        origin = headers.get(b"origin", b"").decode("latin-1")
        if not host or not self.hosts.allows(host, port):
            message = f"Host {host!r} is not a name of this server; allow it with --allow-host"
            await refuse(scope, send, 403, message, "host_not_allowed")
            return
        if origin and not self.hosts.allows(urlsplit(origin).netloc, port):
            message = f"Origin {origin!r} is not allowed; allow its host with --allow-host"
            await refuse(scope, send, 403, message, "origin_not_allowed")
            return
        await self.app(scope, receive, send)


class BearerAuth:
    """Every request but `/healthz` needs `Authorization: Bearer TOKEN` (compared in constant time)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in OPEN_PATHS:
            given = next((value for name, value in scope["headers"] if name == b"authorization"), b"")
            if not hmac.compare_digest(given, self.expected):
                await refuse(scope, send, 401, "missing or wrong bearer token", "invalid_api_key")
                return
        await self.app(scope, receive, send)


class BodyTooLarge(HTTPException):
    """The request body passed the limit while it was being read (an HTTPException, so a framework
    that wraps errors while parsing a body still answers 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is larger than the limit of {limit} bytes (--max-body-bytes)")


class BodyLimit:
    """Refuses (413, naming the limit) a body over `limit` bytes: by its Content-Length at once, else
    while it streams in, so an endless body is never read whole."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        message = BodyTooLarge(self.limit).detail
        length = dict(scope["headers"]).get(b"content-length", b"0")
        if not length.isdigit() or int(length) > self.limit:
            await refuse(scope, send, 413, message, "body_too_large")
            return
        seen, started = [0], [False]

        async def counted() -> Message:
            event = await receive()
            if event["type"] == "http.request":
                seen[0] += len(event.get("body", b""))
                if seen[0] > self.limit:
                    raise BodyTooLarge(self.limit)
            return event

        async def watched(event: Message) -> None:
            started[0] = started[0] or event["type"] == "http.response.start"
            await send(event)

        try:
            await self.app(scope, counted, watched)
        except BodyTooLarge:
            if not started[0]:
                await refuse(scope, send, 413, message, "body_too_large")
