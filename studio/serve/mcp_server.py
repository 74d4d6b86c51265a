"""`flowstudio mcp serve PATH`: every flow under PATH is an MCP tool, on the official `mcp` SDK.

A tool's input schema comes from the flow's typed inputs and its output schema from the
types of its outputs, so a client gets structured results it can check. A call is a run
like any other (stored, resumable, traced, exported when OTLP is configured); while it runs,
each finished step is sent as a progress notification.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server

from studio.errors import FlowError, InputError
from studio.flow.spec import Durability, load_flow
from studio.runtime.compiler import Plan, compile_flow
from studio.runtime.durability import choose
from studio.runtime.engine import RunOptions
from studio.runtime.io_schema import flow_schema, inputs_schema
from studio.runtime.runner import run_flow_async
from studio.serve.schemas import check_inputs

RUN_ID_META = "flowstudio/run_id"
"""The `_meta` key of a result that names the stored run."""


@dataclass(frozen=True)
class FlowTool:
    """One flow, as an MCP tool."""

    path: Path
    plan: Plan

    @property
    def name(self) -> str:
        return self.plan.flow.spec.name

    def schema(self) -> types.Tool:
        schema = flow_schema(self.plan)
        return types.Tool(
            name=self.name,
            description=self.plan.flow.spec.description or f"Run the flow {self.name}.",
            input_schema=schema.inputs,
            output_schema=schema.outputs,
        )


def flow_files(path: Path) -> list[Path]:
    """PATH itself, or the flow files in the folder PATH (layout sidecars left out)."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise InputError(f"{path} is neither a flow file nor a folder", field="PATH")
    return sorted(p for p in path.glob("*.y*ml") if not p.name.endswith((".layout.yaml", ".layout.yml")))


def load_tools(path: Path) -> dict[str, FlowTool]:
    """Compile every flow under PATH (nothing runs); raises FlowError on a bad one or a name used twice."""
    tools: dict[str, FlowTool] = {}
    for file in flow_files(path):
        plan = compile_flow(load_flow(file))
        name = plan.flow.spec.name
        if name in tools:
            raise InputError(f"two flows are named {name!r}: {tools[name].path} and {file}", file=str(file))
        tools[name] = FlowTool(file, plan)
    if not tools:
        raise InputError(f"no flow files in {path}", field="PATH")
    return tools


def relative(text: str, folder: Path) -> str:
    """`text` naming files relative to the served folder (clients never see the server's paths)."""
    return text.replace(f"{folder}/", "").replace(str(folder), ".")


def error_result(text: str, folder: Path) -> types.CallToolResult:
    """A tool error whose text names files relative to the served folder."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=relative(text, folder))], is_error=True)


async def call_flow(
    tool: FlowTool,
    arguments: dict[str, Any],
    db: str | None,
    progress: Any,
    folder: Path | None = None,
    durability: Durability | None = None,
) -> types.CallToolResult:
    """Run the flow; finished steps are reported through `progress(done, total, message)`.

    The arguments are checked strictly against the tool's published input schema first.
    `durability`: the mode of runs whose flow names none (`studio.runtime.durability`)."""
    folder = folder or tool.path.parent
    try:
        check_inputs(inputs_schema(tool.plan), arguments, field="arguments")
    except FlowError as err:
        return error_result(f"{err.field}: {err.message}", folder)
    total, done, sent = float(len(tool.plan.nodes)), [0], []

    def on_step(*, event: str, **details: Any) -> None:
        if event == "step_finished" and "." not in details["step"].node:
            done[0] += 1
            message = f"{details['step'].node}: {details['step'].status}"
            sent.append(asyncio.ensure_future(progress(float(done[0]), total, message)))

    try:
        options = RunOptions(durability=choose(None, tool.plan.flow.spec.durability, durability))
        result = await run_flow_async(tool.path, arguments, options=options, db=db, hooks=[on_step])
    except FlowError as err:
        return error_result(str(err), folder)
    finally:
        await asyncio.gather(*sent, return_exceptions=True)
    failed = result.status != "succeeded"
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text=relative(json.dumps(result.as_json(), ensure_ascii=False), folder))
        ],
        structured_content=None if failed else result.outputs,
        is_error=failed,
        _meta={RUN_ID_META: result.run_id},
    )


def build_server(
    tools: dict[str, FlowTool], db: str | None, folder: Path | None = None, durability: Durability | None = None
) -> Server[Any]:
    """The MCP server: `tools/list` gives every flow, `tools/call` runs one (errors name files
    relative to `folder`, the served folder; `durability` for flows that name no mode)."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[t.schema() for t in tools.values()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = tools.get(params.name)
        if tool is None:
            text = f"no flow named {params.name!r}; flows: {sorted(tools)}"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
        return await call_flow(tool, dict(params.arguments or {}), db, ctx.session.report_progress, folder, durability)

    return Server("flowstudio", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over stdin/stdout (stdout carries protocol messages only)."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve_http(
    server: Server[Any], host: str, port: int, guard: Guard, announce: Callable[[str], None] = print
) -> None:
    """Serve streamable HTTP at http://HOST:PORT/mcp until interrupted, behind the same Host check,
    token and body limit as `flowstudio serve`; `announce` gets the URL once it is bound. Raises
    InputError when the address cannot be bound."""
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from studio.serve.guard import BearerAuth, BodyLimit, HostGuard, Hosts
    from studio.serve.listen import bind

    hosts = Hosts.of(host, guard.allow_hosts)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts.sdk_hosts(port),
        allowed_origins=hosts.sdk_origins(port),
    )
    app: Any = server.streamable_http_app(
        host=host, transport_security=security, max_request_body_size=guard.max_body_bytes
    )
    app = BodyLimit(app, guard.max_body_bytes)
    if guard.token:
        app = BearerAuth(app, guard.token)
    app = HostGuard(app, hosts)
    sock = bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    announce(f"http://{shown}:{port}/mcp")
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[sock])


@dataclass(frozen=True)
class Guard:
    """What an HTTP client must pass: its Host, a token, a body size."""

    token: str | None = None
    """The bearer token every request needs (None: none, loopback only)."""
    allow_hosts: tuple[str, ...] = ()
    """Host names accepted besides loopback and the bound address."""
    max_body_bytes: int = 1_000_000
    """The largest request body."""
