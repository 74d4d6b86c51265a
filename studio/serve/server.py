"""Start the server: check the token and the host, bind, print the URL, run uvicorn (in one
process, or in `--workers N` processes: `studio.serve.workers`)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.errors import InputError
from studio.flow.spec import Durability
from studio.serve import DEFAULT_HOST, DEFAULT_MAX_RUNS, DEFAULT_PORT
from studio.serve.app import create_app
from studio.serve.catalog import Catalog
from studio.serve.guard import DEFAULT_MAX_BODY_BYTES, Hosts
from studio.serve.listen import bind, read_token
from studio.serve.published import VersionedCatalog
from studio.store import db_location, open_store
from studio.store import shown as shown_store

KEEP_ALIVE_S = 30
"""How long an idle keep-alive connection stays open; uvicorn's 5 s default races busy clients'
pooled connections (a request sent as the server closes the connection)."""


def check_flows(path: str | Path, published_from: str | Path | None = None) -> int:
    """How many flows `path` serves (their published versions, from the store `published_from`);
    a flow file that does not load is an error (FlowError)."""
    target = Path(path)
    if not target.exists():
        raise InputError(f"{path}: no such file or folder", field="PATH")
    if target.is_file():
        from studio.flow.spec import load_flow
        from studio.runtime.compiler import compile_flow

        compile_flow(load_flow(target))
    if published_from is not None:
        catalog = VersionedCatalog(target, db=published_from, published=True)
        try:
            return len(catalog.flows())
        finally:
            catalog.close()
    return len(Catalog(target).flows())


@dataclass(frozen=True)
class Settings:
    """What a server process needs to build its app: plain values, so that the workers of
    `--workers N` get them as JSON (the bearer token they read from the environment themselves)."""

    path: str
    """The flow file or folder served."""
    db: str
    """The store: a SQLite file or a PostgreSQL URL."""
    host: str
    """The bound address (with `allow_hosts`, the names clients may use)."""
    token_env: str | None = None
    """The environment variable holding the bearer token (None: no token)."""
    max_concurrency: int = DEFAULT_MAX_RUNS
    """Runs executing at once in one process."""
    allow_hosts: tuple[str, ...] = ()
    """Further host names clients may call the server by."""
    allow_models: tuple[str, ...] = ()
    """Model patterns a request may swap in."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """The largest request body."""
    published: bool = False
    """Serve each flow's published version, not its file."""
    durability: Durability | None = None
    """The mode of runs whose flow names none."""

    def app(self, *, siblings: bool = False) -> Any:
        """The FastAPI app; `siblings`: other processes serve the same store."""
        return create_app(
            self.path,
            db=self.db,
            token=read_token(self.token_env, self.host),
            max_runs=self.max_concurrency,
            hosts=Hosts.of(self.host, self.allow_hosts),
            allow_models=self.allow_models,
            max_body_bytes=self.max_body_bytes,
            published=self.published,
            durability=self.durability,
            siblings=siblings,
        )


def serve(
    path: str | Path,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    db: str | Path | None = None,
    token_env: str | None = None,
    max_concurrency: int = DEFAULT_MAX_RUNS,
    allow_hosts: tuple[str, ...] = (),
    allow_models: tuple[str, ...] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    announce: Callable[[str], None] = print,
    published: bool = False,
    durability: Durability | None = None,
    workers: int = 1,
) -> None:
    """Serve the flow file or folder at `path` until interrupted, in `workers` processes;
    raises FlowError on bad input."""
    read_token(token_env, host)
    store_path = db_location(db)
    open_store(store_path).close()  # a store that cannot open (or migrate) is bad input, before any worker
    count = check_flows(path, store_path if published else None)
    settings = Settings(
        path=str(path),
        db=str(store_path),
        host=host,
        token_env=token_env,
        max_concurrency=max_concurrency,
        allow_hosts=allow_hosts,
        allow_models=allow_models,
        max_body_bytes=max_body_bytes,
        published=published,
        durability=durability,
    )
    app = settings.app() if workers == 1 else None  # built before binding: a bad setting binds nothing
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    what = "published flow" if published else "flow"
    processes = f", {workers} workers" if workers > 1 else ""
    announce(
        f"Serving {count} {what}{'s' if count != 1 else ''} at http://{shown}:{bound}"
        f" (store {shown_store(store_path)}{processes})"
    )
    if host in ("0.0.0.0", "::") and not allow_hosts:
        announce("Answering only requests addressed to localhost: add --allow-host NAME for the names clients use")
    if app is not None:
        run(app, sock)
        return
    from studio.serve.workers import supervise

    code = supervise(sock, settings, workers)
    if code:
        raise SystemExit(code)


def run(app: Any, sock: socket.socket, started: Callable[[], None] | None = None) -> None:
    """Run uvicorn with `app` on the listening socket `sock` until a signal stops it; `started` is
    called once the app has started and the socket is served."""
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started and started is not None:
                started()

    config = uvicorn.Config(
        app, log_level="warning", access_log=False, timeout_graceful_shutdown=5, timeout_keep_alive=KEEP_ALIVE_S
    )
    Server(config).run(sockets=[sock])
