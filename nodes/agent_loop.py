"""`llm.agent`'s loops: the text protocol (ReAct style: `Action:`, `Input:`, `Observation:`,
`Answer:`) and function calling; each tool call's observation, errors included, goes back to
the model, and every turn is recorded."""

from __future__ import annotations

import json
import re
import time
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from nodes import prompting, tooling
from studio.node import McpTool, Message, NodeContext, NodeError, ToolCallingLLM, render

Tools = dict[str, tooling.AnyTool]
Turns = list[dict[str, Any]]


class Settings(Protocol):
    """The agent's config fields the loops read."""

    prompt: str
    instructions: str
    demos: list[dict[str, Any]]
    max_turns: int
    max_tokens: int | None
    tool_timeout_s: float


_ACTION = re.compile(r"Action:[ \t]*(.*)")
_CALL = re.compile(r"^([A-Za-z_][\w.]*)\s*(?:[\[(](.*)[\])]|[:\s]\s*(.*))?$")
_INPUT = re.compile(r"^(?:Action )?Input:[ \t]*(.*)$", re.MULTILINE)
_ANSWER = re.compile(r"(?:Final )?Answer:\s*(.*)")
PROTOCOL = """To use a tool, write "Action:" with the tool's name and "Input:" with its input, then wait for the Observation.
When you know the answer, write "Answer:" and the answer."""


def parse_action(line: str, given: str | None, tools: dict[str, tooling.AnyTool]) -> tuple[str, str]:
    """Tool name and input from an `Action:` line and the `Input:` line, as forgiving as is safe.

    Accepts `calculator` + `Input: 2 + 2`, `calculator[2 + 2]`, `calculator(2 + 2)`, `calculator: 2 + 2`;
    with a single tool, an action that names no tool (`Action: 2 + 2`, a small model's habit) is its input.
    """
    call = _CALL.match(line)
    if call:
        inline = call.group(2) if call.group(2) is not None else call.group(3)
        return call.group(1), (inline if inline is not None else given or "").strip()
    if len(tools) == 1:
        return next(iter(tools)), given if given is not None else line
    return line, given or ""


class Step(BaseModel):
    """One tool use in a demo."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    input: str
    observation: str


async def use_tool(
    name: str, arguments: Any, tools: Tools, turn: dict[str, Any], ctx: NodeContext, timeout_s: float
) -> str:
    """Run one tool call for the model; failures become the observation, so the agent can recover."""
    turn.update(tool=name, input=arguments)
    try:
        if name not in tools:
            raise NodeError(f"unknown tool {name!r}; the tools are {', '.join(tools)}")
        kwargs = bind(tools[name], arguments)
        tool = tools[name]
        if isinstance(tool, McpTool):
            result = await _call_mcp(tool, kwargs, turn, ctx)
        else:
            result = await tooling.call(name, tool, kwargs, timeout_s)
    except NodeError as err:
        turn["error"] = str(err)
        return f"Error: {err}"
    observation = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    turn["observation"] = observation[:2000]
    return turn["observation"]  # type: ignore[no-any-return]


async def _call_mcp(tool: McpTool, kwargs: dict[str, Any], turn: dict[str, Any], ctx: NodeContext) -> Any:
    """One MCP call; the turn records the server and the latency, and a tool-side error becomes the error."""
    turn["server"] = tool.server
    start = time.perf_counter()
    try:
        result = await ctx.mcp_call(tool.source, tool.remote, kwargs)
    finally:
        turn["latency_s"] = round(time.perf_counter() - start, 4)
    if result.is_error:
        raise NodeError(f"tool {tool.name!r} failed: {result.text}"[:2000], kind="tool_error")
    return result.text


def bind(tool: tooling.AnyTool, arguments: Any) -> dict[str, Any]:
    """A JSON object is the keyword arguments; other text goes to a tool's only parameter."""
    if isinstance(arguments, dict):
        return arguments
    text = str(arguments).strip()
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    params = list(tooling.input_ports(tool))
    if len(params) != 1:
        raise NodeError(f"write the input as a JSON object with keys {params}", kind="bad_input")
    return {params[0]: text.strip("\"'`")}


def _preamble(instructions: str, tools: Tools) -> str:
    listed = "\n".join(f"- {tooling.summary(name, tool)}" for name, tool in tools.items())
    return f"{instructions}\n\nTools:\n{listed}".strip()


async def text_loop(
    config: Settings, task: str, tools: Tools, ctx: NodeContext, turns: Turns, past: list[Message]
) -> str | None:
    """The text protocol: the answer, or None when `max_turns` replies gave none."""
    parts = [_preamble(config.instructions, tools) + "\n\n" + PROTOCOL]
    for demo in config.demos:
        lines = [f"Question: {render(config.prompt, demo)}"]
        for step in demo.get("steps", []):
            lines += [f"Action: {step['tool']}", f"Input: {step['input']}", f"Observation: {step['observation']}"]
        parts.append("\n".join([*lines, f"Answer: {demo['answer']}"]))
    if past:
        parts.append("Conversation so far:\n" + prompting.transcript(past))
    transcript = "\n\n".join(parts) + f"\n\nQuestion: {task}\n"
    for number in range(1, config.max_turns + 1):
        completion = await ctx.llm.complete(
            prompt=transcript,
            stop=["\nObservation:", "Observation:", "\nQuestion:"],
            max_tokens=config.max_tokens,
        )
        reply = completion.text.strip()
        turn: dict[str, Any] = {"turn": number, "reply": reply}
        turns.append(turn)
        action, answer = _ACTION.search(reply), _ANSWER.search(reply)
        if answer and (action is None or answer.start() < action.start()):
            turn["answer"] = answer.group(1).strip()
            return turn["answer"]  # type: ignore[no-any-return]
        if action is None:
            turn["error"] = "the reply has neither an Action nor an Answer"
            transcript += f"{reply}\nObservation: Error: write Action: and Input:, or Answer:\n"
            continue
        given = _INPUT.search(reply, action.end())
        name, arguments = parse_action(action.group(1).strip(), given.group(1).strip() if given else None, tools)
        observation = await use_tool(name, arguments, tools, turn, ctx, config.tool_timeout_s)
        transcript += f"Action: {name}\nInput: {arguments}\nObservation: {observation}\n"
    return None


async def functions_loop(
    config: Settings, task: str, tools: Tools, ctx: NodeContext, turns: Turns, past: list[Message]
) -> str | None:
    """The provider's function calling: the answer, or None when `max_turns` replies gave none."""
    llm = ctx.llm
    if not isinstance(llm, ToolCallingLLM):
        raise NodeError("this model offers no function calling; use protocol: text", kind="bad_config")
    schemas = [tooling.function_schema(name, tool) for name, tool in tools.items()]
    messages = [Message("system", config.instructions), *past, Message("user", task)]
    for number in range(1, config.max_turns + 1):
        reply = await llm.complete_with_tools(messages=messages, tools=schemas, max_tokens=config.max_tokens)
        if not reply.calls:
            turns.append({"turn": number, "reply": reply.text, "answer": reply.text.strip()})
            return reply.text.strip()
        results = []
        for call in reply.calls:
            turn: dict[str, Any] = {"turn": number, "reply": reply.text}
            turns.append(turn)
            observation = await use_tool(call.name, call.arguments, tools, turn, ctx, config.tool_timeout_s)
            results.append(f"{call.name}({json.dumps(call.arguments)}) returned: {observation}")
        # Results go back as plain messages, which every provider accepts after any reply.
        messages += [Message("assistant", reply.text or "Calling tools."), Message("user", "\n".join(results))]
    return None
