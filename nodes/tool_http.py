"""`tool.http`: one HTTP request, refused when it would reach a private address.

Every hop (the URL, then each redirect, followed here by hand) is checked first
(`nodes.http_safety`: unless its host is in `allow_hosts`, every address must be public); the
request then goes to the checked address itself (Host header and TLS name kept). `resolve` is
looked up here at each hop, so tests can replace it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from nodes.http_safety import checked_address, deeper_than, header_value, read_capped, resolve, why_not_public
from studio.node import Node, NodeContext, NodeError, Role, secrets

_REDIRECTS = {301, 302, 303, 307, 308}
_PRIVATE_HEADERS = {"authorization", "cookie", "proxy-authorization"}
MAX_DEPTH = 64
"""JSON nested deeper than this is not parsed into `data` (the text is still returned)."""
__all__ = ["Http", "resolve", "why_not_public"]


class Http(Node):
    """Send an HTTP request; private, loopback and link-local targets are refused unless allowed."""

    span_kind = "TOOL"
    roles: ClassVar[frozenset[Role]] = frozenset({"http_request"})

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
        headers = {**{k: header_value(v) for k, v in c.headers.items()}, **inputs.headers}
        method, body = c.method, inputs.body
        async with httpx.AsyncClient(trust_env=False, follow_redirects=False) as client:
            for _ in range(c.max_redirects + 1):
                address = await checked_address(url, self.config.allow_hosts, resolve)
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
                    content = await read_capped(response, c.max_bytes)
                finally:
                    await response.aclose()
                return self._outputs(response, content, url)
        raise NodeError(f"more than {c.max_redirects} redirects", kind="server")

    def _outputs(self, response: httpx.Response, content: bytes, url: httpx.URL) -> Outputs:
        if self.config.fail_on_status and response.status_code >= 400:
            body = secrets.mask(content[:300].decode("utf-8", errors="replace"))
            raise NodeError(f"HTTP {response.status_code} from {url}: {body!r}", kind="http_status")
        text = content.decode(response.encoding or "utf-8", errors="replace")
        try:
            data = json.loads(content) if content else None
        except (ValueError, RecursionError):
            data = None
        if deeper_than(data, MAX_DEPTH):
            data = None
        headers = {k.lower(): v for k, v in response.headers.items()}
        return self.Outputs(status=response.status_code, headers=headers, text=text, data=data, url=str(url))
