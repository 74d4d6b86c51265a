"""`tool.http`: one HTTP request, refused when it would reach a private address.

Every hop (the URL, then each redirect, followed here by hand) is resolved first; unless its
host is in `allow_hosts`, every address must be public (not private, loopback, link-local,
multicast, reserved or unspecified, IPv4 inside IPv6 included). The request then goes to
the checked address itself (Host header and TLS name kept), so DNS cannot answer
differently between the check and the connection.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from studio.node import Node, NodeContext, NodeError, secrets

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_REDIRECTS = {301, 302, 303, 307, 308}
_PRIVATE_HEADERS = {"authorization", "cookie", "proxy-authorization"}
MAX_DEPTH = 64
"""JSON nested deeper than this is not parsed into `data` (the text is still returned)."""


async def resolve(host: str, port: int) -> list[str]:
    """The addresses a host name resolves to (tests replace this)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def why_not_public(address: str) -> str | None:
    """What kind of non-public address this is, or None for a public one."""
    ip: IPAddress = ipaddress.ip_address(address.split("%")[0])
    embedded = [getattr(ip, "ipv4_mapped", None), getattr(ip, "sixtofour", None)]
    if isinstance(ip, ipaddress.IPv6Address) and ip in ipaddress.ip_network("64:ff9b::/96"):
        embedded.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    for inner in filter(None, embedded):
        if reason := why_not_public(str(inner)):
            return reason
    for kind in ("loopback", "link_local", "unspecified", "multicast", "private", "reserved"):
        if getattr(ip, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if ip.is_global else "non-global"


class Http(Node):
    """Send an HTTP request; private, loopback and link-local targets are refused unless allowed."""

    span_kind = "TOOL"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"] = "GET"
        """HTTP method."""
        headers: dict[str, str] = {}
        """Headers sent with every request; a value `$env.NAME` is read from the environment."""
        allow_hosts: list[str] = []
        """Hosts (as written in URLs, e.g. 127.0.0.1 or intranet.local) that may have private addresses."""
        timeout_s: float = Field(default=30.0, gt=0)
        """Seconds for the whole request, redirects included."""
        max_redirects: int = Field(default=5, ge=0, le=20)
        """Redirects followed; each target is checked like the first URL."""
        max_bytes: int = Field(default=5_000_000, gt=0)
        """Largest response body read; a larger one fails the node."""
        fail_on_status: bool = True
        """Fail the node on a 4xx or 5xx response (so `retry` applies); else return it."""

    class Inputs(BaseModel):
        url: str
        """http or https URL."""
        query: dict[str, Any] = {}
        """Query parameters added to the URL."""
        body: Any = None
        """Request body: text is sent as is, anything else as JSON."""
        headers: dict[str, str] = {}
        """Headers for this request, on top of the configured ones."""

    class Outputs(BaseModel):
        status: int
        """HTTP status code."""
        headers: dict[str, str]
        """Response headers (lowercase names)."""
        text: str
        """Response body as text."""
        data: Any
        """Response body parsed as JSON; null when it is not JSON."""
        url: str
        """The final URL, after redirects."""

    config: Config

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        try:
            return await asyncio.wait_for(self._request(inputs), self.config.timeout_s)
        except TimeoutError:
            raise NodeError(f"HTTP request timed out after {self.config.timeout_s:g} s", kind="timeout") from None
        except httpx.HTTPError as err:
            raise NodeError(f"HTTP request failed: {type(err).__name__}: {err}", kind="server") from None

    async def _request(self, inputs: Inputs) -> Outputs:
        c = self.config
        url = httpx.URL(inputs.url).copy_merge_params(inputs.query) if inputs.query else httpx.URL(inputs.url)
        headers = {**{k: _secret(v) for k, v in c.headers.items()}, **inputs.headers}
        method, body = c.method, inputs.body
        async with httpx.AsyncClient(trust_env=False, follow_redirects=False) as client:
            for _ in range(c.max_redirects + 1):
                address = await self._check(url)
                request = client.build_request(
                    method,
                    url.copy_with(host=address),
                    headers={**headers, "Host": url.netloc.decode("ascii")},
                    extensions={"sni_hostname": url.host} if url.scheme == "https" else {},
                    **({} if body is None else {"content": body} if isinstance(body, str) else {"json": body}),
                )
                response = await client.send(request, stream=True)
                try:
                    if response.status_code in _REDIRECTS and "location" in response.headers:
                        target = url.join(response.headers["location"])
                        if target.host != url.host:
                            headers = {k: v for k, v in headers.items() if k.lower() not in _PRIVATE_HEADERS}
                        if response.status_code == 303 or (response.status_code in (301, 302) and method == "POST"):
                            method, body = "GET", None
                        url = target
                        continue
                    content = await self._read(response)
                finally:
                    await response.aclose()
                return self._outputs(response, content, url)
        raise NodeError(f"more than {c.max_redirects} redirects", kind="server")

    async def _check(self, url: httpx.URL) -> str:
        """The address to connect to; raises NodeError (kind `blocked`) for a refused target."""
        if url.scheme not in ("http", "https") or not url.host:
            raise NodeError(f"only http and https URLs are allowed, not {str(url)!r}", kind="bad_input")
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            addresses = await resolve(url.host, port)
        except OSError as err:
            raise NodeError(f"cannot resolve {url.host!r}: {err}", kind="server") from None
        if url.host.lower() in {h.lower().strip("[]") for h in self.config.allow_hosts}:
            return addresses[0]
        for address in addresses:
            if reason := why_not_public(address):
                raise NodeError(
                    f"refused {url.scheme}://{url.netloc.decode('ascii')}: {url.host} resolves to {address}, "
                    f"{'an' if reason[0] in 'aeiou' else 'a'} {reason} address; "
                    "add the host to the node's `allow_hosts` if this is intended",
                    kind="blocked",
                )
        return addresses[0]

    async def _read(self, response: httpx.Response) -> bytes:
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > self.config.max_bytes:
                raise NodeError(f"response larger than max_bytes ({self.config.max_bytes})", kind="too_large")
            chunks.append(chunk)
        return b"".join(chunks)

    def _outputs(self, response: httpx.Response, content: bytes, url: httpx.URL) -> Outputs:
        if self.config.fail_on_status and response.status_code >= 400:
            body = secrets.mask(content[:300].decode("utf-8", errors="replace"))
            raise NodeError(f"HTTP {response.status_code} from {url}: {body!r}", kind="http_status")
        text = content.decode(response.encoding or "utf-8", errors="replace")
        try:
            data = json.loads(content) if content else None
        except (ValueError, RecursionError):
            data = None
        if _deeper_than(data, MAX_DEPTH):
            data = None
        headers = {k.lower(): v for k, v in response.headers.items()}
        return self.Outputs(status=response.status_code, headers=headers, text=text, data=data, url=str(url))


def _secret(value: str) -> str:
    if not value.startswith("$env."):
        return value
    name = value.removeprefix("$env.")
    secret = secrets.reveal(name)
    if secret is None:
        raise NodeError(f"environment variable {name} is not set (a header reads {value})", kind="auth")
    return secret


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether JSON data nests deeper than `limit` (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False
