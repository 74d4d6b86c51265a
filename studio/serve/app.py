"""The FastAPI app: flows as HTTP endpoints, runs in the CLI's SQLite store.

Routes: `GET /healthz`, `GET /flows`, `POST /flows/{name}/runs` (mode wait, stream or
background), `GET /runs/{id}`, `GET /runs/{id}/events`, `POST /runs/{id}/resume`,
`POST /runs/{id}/cancel`, `GET /runs/{id}/trace`, `POST|GET /runs/{id}/feedback`, `POST /v1/chat/completions`, `GET /v1/models`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, Header, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from studio.errors import FlowError, InputError
from studio.flow.spec import Durability
from studio.runtime import runner
from studio.runtime.durability import choose
from studio.runtime.engine import Engine, RunOptions, RunResult
from studio.runtime.runner import FlowChanged
from studio.serve import DEFAULT_MAX_RUNS, chat
from studio.serve.catalog import Catalog, NotFound
from studio.serve.docs import docs_page
from studio.serve.events import Event, parse_id, run_object
from studio.serve.feedback import FeedbackRequest, add_review, feedback_row
from studio.serve.guard import DEFAULT_MAX_BODY_BYTES, BearerAuth, BodyLimit, BodyTooLarge, HostGuard, Hosts
from studio.serve.manager import Mode, NotNow, RunManager, Start
from studio.serve.published import VersionedCatalog
from studio.serve.schemas import add_flow_paths, check_inputs
from studio.store import open_store
from studio.store.base import step_row

log = logging.getLogger("flowstudio.serve")


class RunRequest(BaseModel):
    """The body of `POST /flows/{name}/runs`."""

    model_config = ConfigDict(extra="forbid")

    inputs: dict[str, Any] = Field(default_factory=dict)
    """The flow's inputs by name (see `GET /flows` for their schemas)."""
    mode: Literal["wait", "stream", "background"] = "wait"
    """wait: 200 and the run; stream: server-sent events; background: 202 and the run id."""
    models: dict[str, str] = Field(default_factory=dict)
    """Model alias overrides (ALIAS → model string), like `flowstudio run --model`."""


class ResumeRequest(BaseModel):
    """The body of `POST /runs/{id}/resume`."""

    model_config = ConfigDict(extra="forbid")

    values: dict[str, Any] = Field(default_factory=dict)
    """Answers for the waiting `human.input` nodes (NODE → VALUE)."""
    mode: Literal["wait", "stream", "background"] = "wait"
    """As for a new run."""


def create_app(
    path: str | Path,
    *,
    db: str | Path,
    token: str | None = None,
    max_runs: int = DEFAULT_MAX_RUNS,
    hosts: Hosts | None = None,
    allow_models: tuple[str, ...] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    published: bool = False,
    durability: Durability | None = None,
    siblings: bool = False,
) -> FastAPI:
    """The server of the flow file or folder at `path`, recording runs in the SQLite file `db`.

    `hosts` are the names a client may call it by (default: loopback only), `allow_models` the
    model patterns a request may swap in besides the flow's own, `max_body_bytes` the largest body;
    `published` serves each flow's published version (`studio.serve.published`), not its file;
    `durability` is the mode of runs whose flow names none (`studio.runtime.durability`);
    `siblings` says other processes serve the same store (`flowstudio serve --workers N`).
    """
    catalog = VersionedCatalog(path, allow_models, db=db, published=published)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = open_store(db)
        manager = RunManager(store, max_runs, siblings=siblings)
        app.state.manager = manager
        resumed = manager.recover()
        if resumed:
            log.warning("resuming %d background run(s): %s", len(resumed), ", ".join(resumed))
        try:
            yield
        finally:
            await manager.shutdown()
            store.close()
            catalog.close()

    app = FastAPI(
        title="Flowstudio",
        version=metadata.version("flowstudio"),
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.catalog = catalog
    app.state.durability = durability
    app.add_middleware(BodyLimit, limit=max_body_bytes)  # the last added runs first: Host, token, size
    if token:
        app.add_middleware(BearerAuth, token=token)
    app.add_middleware(HostGuard, hosts=hosts or Hosts.of("127.0.0.1"))
    _add_error_handlers(app)
    _add_routes(app, catalog)
    chat.add_routes(app, catalog)

    def openapi() -> dict[str, Any]:
        base = get_openapi(title=app.title, version=app.version, routes=app.routes)
        return add_flow_paths(base, {name: served.plan for name, served in catalog.flows().items()})

    app.openapi = openapi  # type: ignore[method-assign]

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        """The API's documentation as one self-contained page (no CDN, no script: works offline)."""
        return HTMLResponse(docs_page(app.openapi()))

    return app


def manager_of(request: Request) -> RunManager:
    manager: RunManager = request.app.state.manager
    return manager


def _add_routes(app: FastAPI, catalog: Catalog) -> None:
    @app.get("/healthz", tags=["server"])
    async def healthz() -> dict[str, str]:
        """200 while the server is up (no token needed)."""
        return {"status": "ok"}

    @app.get("/flows", tags=["flows"])
    async def flows() -> list[dict[str, Any]]:
        """Every served flow: name, description, and its inputs and outputs as JSON Schemas."""
        return [served.listing() for served in catalog.flows().values()]

    @app.post("/flows/{name}/runs", tags=["flows"])
    async def run_flow(name: str, body: RunRequest, request: Request) -> Response:
        """Run a flow: `wait` answers 200 and the run, `stream` server-sent events, `background` 202."""
        served = catalog.get(name)
        check_inputs(served.inputs_schema, body.inputs)
        plan = catalog.plan(served, body.models)
        stream = body.mode == "stream"  # tokens only when streamed
        durability = choose(None, plan.flow.spec.durability, request.app.state.durability)
        options = RunOptions(models=dict(body.models), stream=stream, version=served.version, durability=durability)

        async def begin(engine: Engine) -> Any:
            return await engine.run(plan, body.inputs, options=options)

        return await respond(manager_of(request), begin, body.mode, catalog=catalog)

    @app.get("/runs/{run_id}", tags=["runs"])
    async def get_run(run_id: str, request: Request) -> dict[str, Any]:
        """The run with its status, outputs and steps."""
        manager = manager_of(request)
        return run_object(manager.get(run_id), manager.store.steps(run_id))

    @app.get("/runs/{run_id}/trace", tags=["runs"])
    async def trace(run_id: str, request: Request) -> list[dict[str, Any]]:
        """The run's steps as `flowstudio trace --json` prints them."""
        manager = manager_of(request)
        manager.get(run_id)
        return [step_row(step) for step in manager.store.steps(run_id)]

    @app.get("/runs/{run_id}/events", tags=["runs"])
    async def events(
        run_id: str, request: Request, last_event_id: str | None = Header(default=None, alias="Last-Event-ID")
    ) -> Response:
        """Server-sent events: replayed from the store, then live until the run stops."""
        manager = manager_of(request)
        manager.get(run_id)
        after = None
        if last_event_id:
            try:
                after = parse_id(last_event_id)
            except ValueError:
                raise InputError(
                    "Last-Event-ID must be an event id such as 12 or 12.3", field="Last-Event-ID"
                ) from None
        return sse(manager.follow(run_id, after))

    @app.post("/runs/{run_id}/resume", tags=["runs"])
    async def resume(run_id: str, body: ResumeRequest, request: Request) -> Response:
        """Answer the run's waiting `human.input` nodes (or continue a failed run)."""
        manager = manager_of(request)
        stopped = manager.check_resumable(run_id).status

        async def begin(engine: Engine) -> Any:
            return await runner.resume_on(engine, run_id, values=body.values)

        return await respond(manager, begin, body.mode, resuming=stopped, catalog=catalog)

    @app.post("/runs/{run_id}/cancel", tags=["runs"])
    async def cancel(run_id: str, request: Request) -> dict[str, Any]:
        """Stop a run; its finished steps stay recorded and its status becomes `cancelled`."""
        manager = manager_of(request)
        record = await manager.cancel(run_id)
        return run_object(record, manager.store.steps(run_id))

    @app.post("/runs/{run_id}/feedback", tags=["runs"])
    async def add_feedback(run_id: str, body: FeedbackRequest, request: Request) -> dict[str, Any]:
        """Review a run (LangSmith's feedback shape): a score or value, a comment, corrected outputs."""
        return await add_review(manager_of(request), run_id, body)

    @app.get("/runs/{run_id}/feedback", tags=["runs"])
    async def feedback(run_id: str, request: Request) -> list[dict[str, Any]]:
        """The run's feedback, oldest first."""
        manager = manager_of(request)
        manager.get(run_id)
        return [feedback_row(record) for record in manager.store.feedback(run_id)]  # type: ignore[attr-defined]


async def respond(
    manager: RunManager, begin: Start, mode: Mode, *, resuming: str | None = None, catalog: Catalog | None = None
) -> Response:
    """Start a run task and answer as `mode` says: a `wait` run as `flowstudio run --json` prints it
    plus the version it ran (its error naming files relative to the `catalog`'s folder)."""
    run = manager.start(begin, mode, resuming=resuming)
    if mode == "wait":  # what the engine refuses before the run exists is raised here as well
        return _answer(await run.result(), run.version, catalog)
    queue = run.channel.listen() if mode == "stream" else None
    try:
        run_id = await run.wait_started()
    except BaseException:
        if queue is not None:
            run.channel.forget(queue)
        raise
    if queue is None:
        return JSONResponse({"run_id": run_id}, status_code=202)
    return sse(run.events(queue))


def _answer(result: RunResult, version: str | None, catalog: Catalog | None) -> Response:
    """A `wait` run as `flowstudio run --json` prints it, plus the version it ran."""
    answer = {**result.as_json(), "version": version}
    if catalog is not None and isinstance(answer.get("error"), str):
        answer["error"] = catalog.relative(answer["error"])
    return JSONResponse(answer)


def sse(events: AsyncIterator[Event | None]) -> StreamingResponse:
    """A `text/event-stream` response; None items become keep-alive comments."""

    async def body() -> AsyncIterator[str]:
        async for event in events:
            yield ": keep-alive\n\n" if event is None else event.sse()

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)


def _location(field: str | None) -> list[str]:
    if field is None:
        return ["body"]
    if field.startswith("values."):  # a waiting node's answer
        return ["body", "values"]
    if field == "run_id":
        return ["path", "run_id"]
    if field == "Last-Event-ID":
        return ["header", "Last-Event-ID"]
    return ["body", *field.split(".")]


def _message(err: FlowError) -> str:
    """The error in the API's words: a waiting node's answer is named by its node."""
    if err.field and err.field.startswith("values."):
        return f"{err.field.removeprefix('values.')}: {err.message}"
    if isinstance(err, FlowChanged):
        return f"{err.message}: start a new run (POST /flows/NAME/runs)"
    return err.message


def _add_error_handlers(app: FastAPI) -> None:
    async def bad_input(request: Request, err: Exception) -> Response:
        assert isinstance(err, FlowError)
        catalog: Catalog = request.app.state.catalog
        problem = {"loc": _location(err.field), "msg": catalog.relative(_message(err)), "type": "bad_input"}
        return JSONResponse({"detail": [problem]}, status_code=422)

    async def too_large(request: Request, err: Exception) -> Response:
        assert isinstance(err, BodyTooLarge)
        if request.url.path.startswith("/v1/"):
            error = {"message": err.detail, "type": "invalid_request_error", "code": "body_too_large"}
            return JSONResponse({"error": error}, status_code=413)
        return JSONResponse({"detail": err.detail}, status_code=413)

    async def not_found(request: Request, err: Exception) -> Response:
        return JSONResponse({"detail": str(err)}, status_code=404)

    async def not_now(request: Request, err: Exception) -> Response:
        return JSONResponse({"detail": str(err)}, status_code=409)

    app.add_exception_handler(FlowError, bad_input)
    app.add_exception_handler(BodyTooLarge, too_large)
    app.add_exception_handler(NotFound, not_found)
    app.add_exception_handler(NotNow, not_now)
