"""Start the server: check the token and the host, bind, print the URL, run uvicorn."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Callable
from pathlib import Path

from studio.errors import InputError
from studio.serve import DEFAULT_HOST, DEFAULT_MAX_RUNS, DEFAULT_PORT
from studio.serve.app import create_app
from studio.serve.catalog import Catalog
from studio.store import default_db_path

KEEP_ALIVE_S = 30
"""How long an idle keep-alive connection stays open; uvicorn's 5 s default races busy clients'
pooled connections (a request sent as the server closes the connection)."""


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


def check_flows(path: str | Path) -> int:
    """How many flows `path` serves; a flow file that does not load is an error (FlowError)."""
    target = Path(path)
    if not target.exists():
        raise InputError(f"{path}: no such file or folder", field="PATH")
    if target.is_file():
        from studio.flow.spec import load_flow
        from studio.runtime.compiler import compile_flow

        compile_flow(load_flow(target))
    return len(Catalog(target).flows())


def bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)  # from now on connections wait for the app: the printed URL is good at once
    except OSError as err:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {err.strerror}", field="--port") from None
    return sock


def serve(
    path: str | Path,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    db: str | Path | None = None,
    token_env: str | None = None,
    max_concurrency: int = DEFAULT_MAX_RUNS,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve the flow file or folder at `path` until interrupted; raises FlowError on bad input."""
    import uvicorn

    token = read_token(token_env, host)
    count = check_flows(path)
    store_path = Path(db) if db else default_db_path()
    app = create_app(path, db=store_path, token=token, max_runs=max_concurrency)
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    announce(f"Serving {count} flow{'s' if count != 1 else ''} at http://{shown}:{bound} (store {store_path})")
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, timeout_graceful_shutdown=5, timeout_keep_alive=KEEP_ALIVE_S
    )
    uvicorn.Server(config).run(sockets=[sock])
