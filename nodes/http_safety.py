"""What `tool.http` checks before and after a request: a target's addresses must be public, a
response body has a size cap, parsed JSON a depth cap, and a header may read a secret.

Every hop's host is resolved here; unless it is allowed, every address must be public (not
private, loopback, link-local, multicast, reserved or unspecified, IPv4 inside IPv6 included),
and the request goes to the checked address itself, so DNS cannot answer differently between
the check and the connection.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Collection
from typing import Any

import httpx

from studio.node import NodeError, secrets

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]
"""A host name and port → the addresses it resolves to."""


async def resolve(host: str, port: int) -> list[str]:
    """The addresses a host name resolves to."""
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


async def checked_address(url: httpx.URL, allow_hosts: Collection[str], resolver: Resolver) -> str:
    """The address to connect to for `url`; raises NodeError (kind `blocked`) for a refused target."""
    if url.scheme not in ("http", "https") or not url.host:
        raise NodeError(f"only http and https URLs are allowed, not {str(url)!r}", kind="bad_input")
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        addresses = await resolver(url.host, port)
    except OSError as err:
        raise NodeError(f"cannot resolve {url.host!r}: {err}", kind="server") from None
    if url.host.lower() in {h.lower().strip("[]") for h in allow_hosts}:
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


async def read_capped(response: httpx.Response, max_bytes: int) -> bytes:
    """The response body; NodeError (kind `too_large`) past `max_bytes`."""
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise NodeError(f"response larger than max_bytes ({max_bytes})", kind="too_large")
        chunks.append(chunk)
    return b"".join(chunks)


def header_value(value: str) -> str:
    """A configured header value; `$env.NAME` is read from the environment (NodeError `auth` when unset)."""
    if not value.startswith("$env."):
        return value
    name = value.removeprefix("$env.")
    secret = secrets.reveal(name)
    if secret is None:
        raise NodeError(f"environment variable {name} is not set (a header reads {value})", kind="auth")
    return secret


def deeper_than(value: Any, limit: int) -> bool:
    """Whether JSON data nests deeper than `limit` (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False
