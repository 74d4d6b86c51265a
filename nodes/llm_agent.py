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
the `turns` output, so the step's trace shows the whole loop. The loops are `nodes.agent_loop`'s.

Tools come from Python (`tools:`) and from MCP servers (`mcp:`): each server's tools, after
its allowlist and with its name prefix, join the list the model sees. A turn that called an
MCP tool also names the `server` and the call's `latency_s`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from nodes import agent_loop, prompting, tooling
from studio.node import (
    McpServer,
    Node,
    NodeContext,
    NodeError,
    OptionalVariables,
    PortType,
    Role,
    TemplateInputs,
    ToolCallingLLM,
    refuse_mcp_command,
    render,
)

MESSAGES = "messages"


class Agent(Node):
    """Answer a task by calling tools in a loop."""

    uses_model = True
    roles: ClassVar[frozenset[Role]] = frozenset({"agent"})

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
                [agent_loop.Step.model_validate(s) for s in demo.get("steps", [])]
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
        loop = agent_loop.functions_loop if use_functions else agent_loop.text_loop
        answer = await loop(self.config, task, tools, ctx, turns, past)
        if answer is None:
            if self.config.on_limit == "fail":
                tried = "; ".join(f"{t.get('tool') or '-'}: {t.get('error') or t.get('observation')}" for t in turns)
                raise NodeError(f"no answer after {self.config.max_turns} turns ({tried})"[:2000], kind="max_turns")
            answer = ""
        return self.Outputs(answer=answer, turns=turns)
