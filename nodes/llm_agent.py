"""`llm.agent`: a model that calls tools in a loop until it answers, at most `max_turns` turns.

Where the model supports it (`ctx.llm` is a ToolCallingLLM whose `supports_tools()` is true:
litellm's `supports_function_calling`), the provider's function calling picks the tools.
Elsewhere, and always on the embedded model, a plain-text protocol does (ReAct style):

    Question: What is 12 times 7?
    Action: calculator
    Input: 12 * 7
    Observation: 84
    Answer: 84

Every turn (the model's reply, the tool, its input and observation, errors) is an item of
the `turns` output, so the step's trace shows the whole loop.

Tools come from Python (`tools:`) and from MCP servers (`mcp:`): each server's tools, after
its allowlist and with its name prefix, join the list the model sees. A turn that called an
MCP tool also names the `server` and the call's `latency_s`.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from nodes import prompting, tooling
from studio.node import (
    McpServer,
    McpTool,
    Message,
    Node,
    NodeContext,
    NodeError,
    OptionalVariables,
    PortType,
    TemplateInputs,
    ToolCallingLLM,
    refuse_mcp_command,
    render,
)

MESSAGES = "messages"

_ACTION = re.compile(r"Action:[ \t]*(.*)")
_CALL = re.compile(r"^([A-Za-z_][\w.]*)\s*(?:[\[(](.*)[\])]|[:\s]\s*(.*))?$")
_INPUT = re.compile(r"^(?:Action )?Input:[ \t]*(.*)$", re.MULTILINE)
_ANSWER = re.compile(r"(?:Final )?Answer:\s*(.*)")
PROTOCOL = """To use a tool, write "Action:" with the tool's name and "Input:" with its input, then wait for the Observation.
When you know the answer, write "Answer:" and the answer."""


def _parse_action(line: str, given: str | None, tools: dict[str, tooling.AnyTool]) -> tuple[str, str]:
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


class Agent(Node):
    """Answer a task by calling tools in a loop."""

    uses_model = True

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        tools: list[str] = []
        """Tool names the agent may call: keys of the flow's `tools:` or `flowstudio.tools` entry points."""
        mcp: list[McpServer] = []
        """MCP servers whose tools the agent may call (HTTP `url` or an allowlisted stdio `command`)."""
        prompt: str = "{{ task }}"
        """Jinja2 template over the node's inputs: the task the agent gets."""
        instructions: str = "Answer the question. Use the tools for anything you cannot do reliably yourself."
        """What the agent is told before the tools; the optimizer rewrites these."""
        demos: list[dict[str, Any]] = []
        """Worked examples for the text protocol: the prompt's inputs, `steps` ({tool, input, observation}) and `answer`."""
        max_turns: int = Field(default=6, ge=1, le=50)
        """Most model replies in one run of the node."""
        on_limit: Literal["fail", "stop"] = "fail"
        """At `max_turns` without an answer: fail the node, or `stop` with an empty answer."""
        protocol: Literal["auto", "functions", "text"] = "auto"
        """`auto`: the provider's function calling where supported, else the text protocol."""
        tool_timeout_s: float = Field(default=30.0, gt=0)
        """Give up on one tool call after this many seconds (the agent sees the error)."""
        max_tokens: int | None = Field(default=None, gt=0)
        """Cap on generated tokens per turn; the model alias' setting when omitted."""
        optional: OptionalVariables = []

    Inputs = TemplateInputs

    class Outputs(BaseModel):
        answer: str
        """The final answer ("" when stopped at `max_turns`)."""
        turns: list[dict[str, Any]]
        """Every turn: the model's `reply`, then `tool`, `input`, `observation` or `answer`, and any `error`."""

    config: Config

    def templates(self) -> list[tuple[str, str]]:
        return [("prompt", self.config.prompt), ("instructions", self.config.instructions)]

    def input_ports(self) -> dict[str, PortType]:
        """The prompt's variables, plus the optional conversation so far (`messages`)."""
        return {**super().input_ports(), MESSAGES: PortType("messages", optional=True)}

    def optional_inputs(self) -> set[str]:
        return super().optional_inputs() | {MESSAGES}

    def model_needs(self) -> list[tuple[tuple[str, ...], str]]:
        """Function calling, when the config asks for it (`protocol: functions`)."""
        if self.config.protocol == "functions":
            return [(("function_calling",), "calls tools by function calling (protocol: functions)")]
        return []

    def check(self) -> list[tuple[str, str]]:
        if not self.config.tools and not self.config.mcp:
            return [("tools", "give the agent at least one tool: `tools:` names or `mcp:` servers")]
        for i, server in enumerate(self.config.mcp):
            if refused := refuse_mcp_command(server):
                return [(f"mcp.{i}.command", refused)]
        for i, demo in enumerate(self.config.demos):
            try:
                [Step.model_validate(s) for s in demo.get("steps", [])]
            except ValueError:
                return [(f"demos.{i}.steps", "each step needs `tool`, `input` and `observation`")]
            if "answer" not in demo:
                return [(f"demos.{i}", "a demo needs an `answer`")]
        return []

    async def run(self, inputs: TemplateInputs, ctx: NodeContext) -> Outputs:
        tools: dict[str, tooling.AnyTool] = {name: ctx.tool(name) for name in self.config.tools}
        for server in self.config.mcp:
            for tool in await ctx.mcp_tools(server):
                if tool.name in tools:
                    raise NodeError(
                        f"two tools are named {tool.name!r}; give the MCP server a `prefix`", kind="bad_config"
                    )
                tools[tool.name] = tool
        values = inputs.values()
        task = render(self.config.prompt, values)
        past = prompting.history(values)
        use_functions = self.config.protocol == "functions" or (
            self.config.protocol == "auto" and isinstance(ctx.llm, ToolCallingLLM) and ctx.llm.supports_tools()
        )
        turns: list[dict[str, Any]] = []
        loop = self._functions if use_functions else self._text
        answer = await loop(task, tools, ctx, turns, past)
        if answer is None:
            if self.config.on_limit == "fail":
                tried = "; ".join(f"{t.get('tool') or '-'}: {t.get('error') or t.get('observation')}" for t in turns)
                raise NodeError(f"no answer after {self.config.max_turns} turns ({tried})"[:2000], kind="max_turns")
            answer = ""
        return self.Outputs(answer=answer, turns=turns)

    async def _use(
        self, name: str, arguments: Any, tools: dict[str, tooling.AnyTool], turn: dict[str, Any], ctx: NodeContext
    ) -> str:
        """Run one tool call for the model; failures become the observation, so the agent can recover."""
        turn.update(tool=name, input=arguments)
        try:
            if name not in tools:
                raise NodeError(f"unknown tool {name!r}; the tools are {', '.join(tools)}")
            kwargs = self._bind(tools[name], arguments)
            tool = tools[name]
            if isinstance(tool, McpTool):
                result = await self._call_mcp(tool, kwargs, turn, ctx)
            else:
                result = await tooling.call(name, tool, kwargs, self.config.tool_timeout_s)
        except NodeError as err:
            turn["error"] = str(err)
            return f"Error: {err}"
        observation = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        turn["observation"] = observation[:2000]
        return turn["observation"]  # type: ignore[no-any-return]

    async def _call_mcp(self, tool: McpTool, kwargs: dict[str, Any], turn: dict[str, Any], ctx: NodeContext) -> Any:
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

    @staticmethod
    def _bind(tool: tooling.AnyTool, arguments: Any) -> dict[str, Any]:
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

    def _preamble(self, tools: dict[str, tooling.AnyTool]) -> str:
        listed = "\n".join(f"- {tooling.summary(name, tool)}" for name, tool in tools.items())
        return f"{self.config.instructions}\n\nTools:\n{listed}".strip()

    async def _text(
        self,
        task: str,
        tools: dict[str, tooling.AnyTool],
        ctx: NodeContext,
        turns: list[dict[str, Any]],
        past: list[Message],
    ) -> str | None:
        parts = [self._preamble(tools) + "\n\n" + PROTOCOL]
        for demo in self.config.demos:
            lines = [f"Question: {render(self.config.prompt, demo)}"]
            for step in demo.get("steps", []):
                lines += [f"Action: {step['tool']}", f"Input: {step['input']}", f"Observation: {step['observation']}"]
            parts.append("\n".join([*lines, f"Answer: {demo['answer']}"]))
        if past:
            parts.append("Conversation so far:\n" + prompting.transcript(past))
        transcript = "\n\n".join(parts) + f"\n\nQuestion: {task}\n"
        for number in range(1, self.config.max_turns + 1):
            completion = await ctx.llm.complete(
                prompt=transcript,
                stop=["\nObservation:", "Observation:", "\nQuestion:"],
                max_tokens=self.config.max_tokens,
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
            name, arguments = _parse_action(action.group(1).strip(), given.group(1).strip() if given else None, tools)
            observation = await self._use(name, arguments, tools, turn, ctx)
            transcript += f"Action: {name}\nInput: {arguments}\nObservation: {observation}\n"
        return None

    async def _functions(
        self,
        task: str,
        tools: dict[str, tooling.AnyTool],
        ctx: NodeContext,
        turns: list[dict[str, Any]],
        past: list[Message],
    ) -> str | None:
        llm = ctx.llm
        if not isinstance(llm, ToolCallingLLM):
            raise NodeError("this model offers no function calling; use protocol: text", kind="bad_config")
        schemas = [tooling.function_schema(name, tool) for name, tool in tools.items()]
        messages = [Message("system", self.config.instructions), *past, Message("user", task)]
        for number in range(1, self.config.max_turns + 1):
            reply = await llm.complete_with_tools(messages=messages, tools=schemas, max_tokens=self.config.max_tokens)
            if not reply.calls:
                turns.append({"turn": number, "reply": reply.text, "answer": reply.text.strip()})
                return reply.text.strip()
            results = []
            for call in reply.calls:
                turn: dict[str, Any] = {"turn": number, "reply": reply.text}
                turns.append(turn)
                observation = await self._use(call.name, call.arguments, tools, turn, ctx)
                results.append(f"{call.name}({json.dumps(call.arguments)}) returned: {observation}")
            # Results go back as plain messages, which every provider accepts after any reply.
            messages += [Message("assistant", reply.text or "Calling tools."), Message("user", "\n".join(results))]
        return None
