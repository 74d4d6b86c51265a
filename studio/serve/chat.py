"""`POST /v1/chat/completions` in OpenAI's shape: `model` names a flow with one `str` input and
one `str` output; the last user message is the input, the output is the assistant's answer.

With `stream: true` the answer comes as `chat.completion.chunk` events: the output node's
tokens as they come (the engine's `token` hook), then whatever of the output they did not
cover, then `data: [DONE]`. `GET /v1/models` lists the flows a chat client can call.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict

from studio.flow.refs import Ref
from studio.runtime.engine import Engine, RunOptions, RunResult
from studio.serve.catalog import Catalog, NotFound, ServedFlow

if TYPE_CHECKING:
    from studio.serve.manager import RunManager, RunTask


class Message(BaseModel):
    """One chat message; content is text or a list of parts (only `text` parts are read)."""

    model_config = ConfigDict(extra="allow")

    role: str
    """`system`, `user`, `assistant` or `tool`."""
    content: str | list[dict[str, Any]] | None = None
    """The text, or OpenAI content parts."""


class ChatRequest(BaseModel):
    """The OpenAI chat request; settings such as `temperature` are accepted and ignored (the flow has its own)."""

    model_config = ConfigDict(extra="allow")

    model: str
    """The flow's name."""
    messages: list[Message]
    """The conversation: a flow whose input is `messages` gets all of it, a `str` input its last user message."""
    stream: bool = False
    """Answer with server-sent `chat.completion.chunk` events."""


class ChatRefused(Exception):
    """A request OpenAI clients should see as an API error."""

    def __init__(self, status: int, message: str, param: str | None, code: str) -> None:
        super().__init__(message)
        self.status, self.param, self.code = status, param, code

    def response(self) -> JSONResponse:
        error = {"message": str(self), "type": "invalid_request_error", "param": self.param, "code": self.code}
        return JSONResponse({"error": error}, status_code=self.status)


def add_routes(app: FastAPI, catalog: Catalog) -> None:
    @app.get("/v1/models", tags=["openai"])
    async def models() -> dict[str, Any]:
        """The flows `/v1/chat/completions` can run, as OpenAI models."""
        flows = [served for served in catalog.flows().values() if served.chat_ports()]
        data = [{"id": s.name, "object": "model", "created": 0, "owned_by": "flowstudio"} for s in flows]
        return {"object": "list", "data": data}

    @app.post("/v1/chat/completions", tags=["openai"])
    async def completions(body: ChatRequest, request: Request) -> Response:
        """Run a flow with one `str` input and one `str` output as an OpenAI chat model."""
        try:
            return await _complete(catalog, request.app.state.manager, body)
        except ChatRefused as refused:
            return refused.response()


async def _complete(catalog: Catalog, manager: RunManager, body: ChatRequest) -> Response:
    try:
        served = catalog.get(body.model)
    except NotFound as err:
        raise ChatRefused(404, str(err), "model", "model_not_found") from None
    ports = served.chat_ports()
    if ports is None:
        message = f"flow {served.name!r} needs one str input and one str output to be a chat model"
        raise ChatRefused(422, message, "model", "not_a_chat_flow")
    input_name, output_name = ports
    value: Any = _turns(body.messages) if served.takes_conversation(input_name) else _last_user_text(body.messages)
    plan = served.plan

    async def begin(engine: Engine) -> RunResult:
        return await engine.run(plan, {input_name: value}, options=RunOptions(stream=body.stream))

    run = manager.start(begin, "stream" if body.stream else "wait")
    queue = run.channel.listen() if body.stream else None
    run_id = await run.wait_started()
    if queue is None:
        result = await run.result()
        return JSONResponse(_completion(manager, served, run_id, result, output_name))
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    chunks = _chunks(manager, run, queue, served, output_name)
    return StreamingResponse(chunks, media_type="text/event-stream", headers=headers)


def _turns(messages: list[Message]) -> list[dict[str, str]]:
    """The conversation as a `messages` port value: `{role, content}` turns, text parts joined."""
    return [{"role": m.role, "content": _text(m)} for m in messages if m.role in ("system", "user", "assistant")]


def _text(message: Message) -> str:
    if isinstance(message.content, list):
        return "".join(str(p.get("text", "")) for p in message.content if p.get("type") == "text")
    return message.content or ""


def _last_user_text(messages: list[Message]) -> str:
    for message in reversed(messages):
        if message.role == "user":
            return _text(message)
    raise ChatRefused(422, "messages: no user message", "messages", "no_user_message")


def _output_of(result_status: str, outputs: dict[str, Any] | None, error: str | None, run_id: str, name: str) -> str:
    if result_status != "succeeded" or outputs is None:
        raise ChatRefused(500, f"run {run_id} {result_status}: {error}", None, f"run_{result_status}")
    value = outputs.get(name)
    return value if isinstance(value, str) else json.dumps(value)


def _usage(manager: RunManager, run_id: str) -> dict[str, int]:
    calls = manager.store.calls(run_id)
    prompt = sum(c.input_tokens for c in calls)
    completion = sum(c.output_tokens for c in calls)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _completion(manager: RunManager, served: ServedFlow, run_id: str, result: RunResult, name: str) -> dict[str, Any]:
    content = _output_of(result.status, result.outputs, result.error, run_id, name)
    return {
        "id": f"chatcmpl-{run_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": served.name,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": _usage(manager, run_id),
    }


async def _chunks(manager: RunManager, run: RunTask, queue: Any, served: ServedFlow, name: str) -> AsyncIterator[str]:
    output = served.plan.outputs[name]
    node = output.node if isinstance(output, Ref) else None
    created, streamed = int(time.time()), ""
    run_id = ""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        data = {"id": f"chatcmpl-{run_id}", "object": "chat.completion.chunk", "created": created, "model": served.name}
        return f"data: {json.dumps({**data, 'choices': [choice]}, ensure_ascii=False)}\n\n"

    async for event in run.events(queue):
        if event is None:
            yield ": keep-alive\n\n"
            continue
        run_id = event.data.get("run_id", run_id)
        if event.name == "run_started":
            yield chunk({"role": "assistant", "content": ""})
        elif event.name == "token" and event.data["node"] == node:
            streamed += event.data["text"]
            yield chunk({"content": event.data["text"]})
        elif event.name == "run_finished":
            data = event.data
            try:
                content = _output_of(data["status"], data["outputs"], data["error"], run_id, name)
            except ChatRefused as refused:
                error = {"message": str(refused), "type": "server_error", "code": refused.code}
                yield f"data: {json.dumps({'error': error})}\n\n"
                return
            if content.startswith(streamed) and len(content) > len(streamed):
                yield chunk({"content": content[len(streamed) :]})
            yield chunk({}, "stop")
            yield "data: [DONE]\n\n"
            return
