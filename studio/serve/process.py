"""One server process: the settings it is built from and uvicorn running its app on a listening
socket (`flowstudio serve` in one process, or each worker of `--workers N`)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from studio.flow.spec import Durability
from studio.serve import DEFAULT_MAX_RUNS
from studio.serve.app import create_app
from studio.serve.guard import DEFAULT_MAX_BODY_BYTES, Hosts
from studio.serve.listen import read_token

KEEP_ALIVE_S = 30
"""How long an idle keep-alive connection stays open; uvicorn's 5 s default races busy clients'
pooled connections (a request sent as the server closes the connection)."""


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
