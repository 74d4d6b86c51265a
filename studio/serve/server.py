"""Start the server: check the token and the host, bind, print the URL, run uvicorn (in one
process, or in `--workers N` processes: `studio.serve.workers`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from studio.errors import InputError
from studio.flow.spec import Durability
from studio.serve import DEFAULT_HOST, DEFAULT_MAX_RUNS, DEFAULT_PORT
from studio.serve.catalog import Catalog
from studio.serve.guard import DEFAULT_MAX_BODY_BYTES
from studio.serve.listen import bind, read_token
from studio.serve.process import Settings, run
from studio.serve.published import VersionedCatalog
from studio.store import db_location, open_store
from studio.store import shown as shown_store


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
