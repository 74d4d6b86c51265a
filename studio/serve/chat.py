"""`POST /v1/chat/completions` in OpenAI's shape: `model` names a flow that can answer a chat.

A flow can answer a chat when it has one `str` output, never waits for a person, and takes the
request through its inputs (see `ChatShape`): the last user message goes to its one text input
(or the whole conversation to its one `messages` input); a system message goes to an input named
`system`, and the turns before the last user message to a `messages` input (or one named
`history` or `messages`). Nothing a request says is dropped: what the flow has no input for is
a 400 that says so. A run that does not succeed is a 422 naming the run, with `x-should-retry:
false`, so an OpenAI client never runs a paid flow twice for one request.

With `stream: true` the answer comes as `chat.completion.chunk` events: the output node's
tokens as they come (the engine's `token` hook), then whatever of the output they did not
cover, then `data: [DONE]`. `GET /v1/models` lists the flows a chat client can call.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict

from studio.errors import FlowError
from studio.export.writer import waits_at
from studio.flow.refs import Ref
from studio.flow.spec import Durability
from studio.runtime.durability import choose
from studio.runtime.engine import Engine, RunOptions, RunResult
from studio.runtime.io_schema import output_types
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
    """The conversation, mapped to the flow's inputs as `ChatShape` says."""
    stream: bool = False
    """Answer with server-sent `chat.completion.chunk` events."""


SYSTEM_ROLES = ("system", "developer")
"""OpenAI's names for the instructions message (`developer` is the newer one)."""
TURN_ROLES = ("user", "assistant")
HISTORY_NAMES = ("history", "messages")
"""Inputs of a list type taken as the earlier turns by their name."""


class ChatRefused(Exception):
    """A request OpenAI clients should see as an API error; never retried (`x-should-retry: false`)."""

    def __init__(
        self, status: int, message: str, param: str | None, code: str, *, kind: str = "invalid_request_error"
    ) -> None:
        super().__init__(message)
        self.status, self.param, self.code, self.kind = status, param, code, kind

    def error(self) -> dict[str, Any]:
        """OpenAI's error object."""
        return {"message": str(self), "type": self.kind, "param": self.param, "code": self.code}

    def response(self) -> JSONResponse:
        headers = {"x-should-retry": "false"}
        return JSONResponse({"error": self.error()}, status_code=self.status, headers=headers)


@dataclass(frozen=True)
class ChatShape:
    """Which flow input takes which part of a chat request, and which output is the answer."""

    output: str
    """The one `str` output: the assistant's message."""
    question: str
    """The input that takes the last user message (a `str` port) or the whole conversation (a `messages` port)."""
    conversation: bool
    """Whether `question` is a `messages` port (it gets every turn)."""
    system: str | None = None
    """The `str` input named `system`: the system message's text."""
    history: str | None = None
    """The input that takes the turns before the last user message."""


def chat_shape(served: ServedFlow) -> ChatShape | str:
    """How a chat request maps to the flow's inputs, or why a chat client cannot call the flow."""
    plan = served.plan
    texts = [name for name, port in output_types(plan).items() if port.name == "str"]
    if len(plan.outputs) != 1 or not texts:
        return f"flow {served.name!r} needs exactly one str output to answer a chat"
    waits = waits_at(plan)
    if waits is not None:
        return f"flow {served.name!r} waits for a person at node {waits!r}; a chat client cannot answer it"
    types = plan.input_types
    system = "system" if "system" in types and types["system"].name == "str" else None
    rest = [name for name in plan.inputs if name != system]
    turns = [
        n for n in rest if types[n].name == "messages" or (n in HISTORY_NAMES and types[n].name in ("list", "any"))
    ]
    questions = [n for n in rest if types[n].name == "str"]
    if len(questions) > 1:
        questions = [n for n in questions if plan.inputs[n].required]
    if len(questions) == 1 and len(turns) <= 1:
        shape = ChatShape(texts[0], questions[0], False, system, turns[0] if turns else None)
    elif not questions and len(turns) == 1 and types[turns[0]].name == "messages":
        shape = ChatShape(texts[0], turns[0], True, system)
    else:
        return f"flow {served.name!r} needs one str (or messages) input for the user's message to answer a chat"
    taken = {shape.question, shape.system, shape.history}
    unset = [name for name in rest if name not in taken and plan.inputs[name].required]
    if unset:
        return f"flow {served.name!r} needs input {unset[0]!r}, which a chat request cannot give"
    return shape


def add_routes(app: FastAPI, catalog: Catalog) -> None:
    @app.get("/v1/models", tags=["openai"])
    async def models() -> dict[str, Any]:
        """The flows `/v1/chat/completions` can run, as OpenAI models."""
        flows = [served for served in catalog.flows().values() if isinstance(chat_shape(served), ChatShape)]
        data = [{"id": s.name, "object": "model", "created": 0, "owned_by": "flowstudio"} for s in flows]
        return {"object": "list", "data": data}

    @app.post("/v1/chat/completions", tags=["openai"])
    async def completions(body: ChatRequest, request: Request) -> Response:
        """Run a flow as an OpenAI chat model (the flows `/v1/models` lists)."""
        try:
            return await _complete(catalog, request.app.state.manager, body, request.app.state.durability)
        except ChatRefused as refused:
            return refused.response()


async def _complete(
    catalog: Catalog, manager: RunManager, body: ChatRequest, durability: Durability | None
) -> Response:
    try:
        served = catalog.get(body.model)
    except NotFound as err:
        raise ChatRefused(404, str(err), "model", "model_not_found") from None
    shape = chat_shape(served)
    if isinstance(shape, str):
        raise ChatRefused(400, shape, "model", "not_a_chat_flow")
    inputs = chat_inputs(served.name, shape, body.messages)
    plan = served.plan
    options = RunOptions(
        stream=body.stream, version=served.version, durability=choose(None, plan.flow.spec.durability, durability)
    )

    async def begin(engine: Engine) -> RunResult:
        return await engine.run(plan, inputs, options=options)

    run = manager.start(begin, "stream" if body.stream else "wait")
    queue = run.channel.listen() if body.stream else None
    try:
        run_id = await run.wait_started()
    except FlowError as err:
        if queue is not None:
            run.channel.forget(queue)
        raise ChatRefused(400, err.message, err.field, "bad_input") from None
    if queue is None:
        result = await run.result()
        return JSONResponse(_completion(manager, served, run_id, result, shape.output))
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    chunks = _chunks(manager, run, queue, served, shape.output)
    return StreamingResponse(chunks, media_type="text/event-stream", headers=headers)


def chat_inputs(flow: str, shape: ChatShape, messages: list[Message]) -> dict[str, Any]:
    """The flow's inputs from a chat request's messages; raises ChatRefused (400) for anything the
    flow has no input for, so that nothing the client said is silently dropped."""
    for index, message in enumerate(messages):
        if message.role not in (*SYSTEM_ROLES, *TURN_ROLES):
            problem = (
                f"messages[{index}]: flow {flow!r} takes system, user and assistant messages, not {message.role!r}"
            )
            raise ChatRefused(400, problem, f"messages[{index}].role", "unsupported_role")
    system = [_text(m, i) for i, m in enumerate(messages) if m.role in SYSTEM_ROLES]
    turns = [{"role": m.role, "content": _text(m, i)} for i, m in enumerate(messages) if m.role in TURN_ROLES]
    inputs: dict[str, Any] = {}
    if shape.system is not None:
        inputs[shape.system] = "\n\n".join(system)
    elif system and not shape.conversation:
        problem = (
            f"flow {flow!r} has no `system` input, so it cannot take the system message; send none, or declare one"
        )
        raise ChatRefused(400, problem, "messages", "system_message_not_supported")
    if shape.conversation:
        kept = [(i, m) for i, m in enumerate(messages) if shape.system is None or m.role not in SYSTEM_ROLES]
        inputs[shape.question] = [{"role": _role(m.role), "content": _text(m, i)} for i, m in kept]
        return inputs
    last = max((i for i, turn in enumerate(turns) if turn["role"] == "user"), default=None)
    if last is None:
        raise ChatRefused(400, "messages: no user message", "messages", "no_user_message")
    if last != len(turns) - 1:
        problem = f"flow {flow!r} answers the last user message; it cannot take the assistant message after it"
        raise ChatRefused(400, problem, "messages", "trailing_assistant_message")
    inputs[shape.question] = turns[last]["content"]
    if shape.history is not None:
        inputs[shape.history] = turns[:last]
    elif last:
        problem = (
            f"flow {flow!r} answers one message: it has no `history` or `messages` input for the {last} earlier "
            "turn(s); send only the last user message, or declare such an input (type messages)"
        )
        raise ChatRefused(400, problem, "messages", "history_not_supported")
    return inputs


def _role(role: str) -> str:
    return "system" if role in SYSTEM_ROLES else role


def _text(message: Message, index: int) -> str:
    if not isinstance(message.content, list):
        return message.content or ""
    kinds = {str(part.get("type")) for part in message.content} - {"text"}
    if kinds:
        problem = f"messages[{index}]: only text content parts are read, not {sorted(kinds)[0]!r}"
        raise ChatRefused(400, problem, f"messages[{index}].content", "unsupported_content")
    return "".join(str(part.get("text", "")) for part in message.content)


def _output_of(result_status: str, outputs: dict[str, Any] | None, error: str | None, run_id: str, name: str) -> str:
    if result_status != "succeeded" or outputs is None:
        message = f"run {run_id} {result_status}: {error} (see GET /runs/{run_id}/trace)"
        raise ChatRefused(422, message, None, f"run_{result_status}", kind="flow_error")
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
                yield f"data: {json.dumps({'error': refused.error()}, ensure_ascii=False)}\n\n"
                return
            if content.startswith(streamed) and len(content) > len(streamed):
                yield chunk({"content": content[len(streamed) :]})
            yield chunk({}, "stop")
            yield "data: [DONE]\n\n"
            return
