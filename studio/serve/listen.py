"""Before a server starts: the bearer token a public address needs, and the listening socket
(shared by `flowstudio serve` and `flowstudio mcp serve --transport http`; no FastAPI here)."""

from __future__ import annotations

import ipaddress
import os
import socket

from studio.errors import InputError


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


def read_token(token_env: str | None, host: str) -> str | None:
    """The bearer token from the environment variable `token_env`; refuses a public host without one."""
    token = None
    if token_env:
        token = os.environ.get(token_env, "")
        if not token:
            raise InputError(f"the environment variable {token_env} is not set or empty", field="--token-env")
    if token is None and not is_loopback(host):
        raise InputError(
            f"refusing to serve on {host} without a token: pass --token-env NAME (bearer token in $NAME)",
            field="--host",
        )
    return token


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on HOST:PORT; raises InputError naming the address when that fails."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as err:
        raise InputError(f"cannot listen on {host}:{port}: {err.strerror}", field="--host") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)  # from now on connections wait for the app: the printed URL is good at once
    except OSError as err:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {err.strerror}", field="--port") from None
    return sock
