"""llm.agent: the text protocol on the scripted model, every turn traced, bounded turns, function calling."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nodes.llm_agent import Agent
from studio.models.base import Completion
from studio.node import Message, NodeContext, TemplateInputs, ToolCall, ToolReply
from tests.nodes.runner import run_flow

FLOW = """
inputs: {q: {type: str}}
outputs: {answer: $agent.answer, turns: $agent.turns}
models:
  default: {model: scripted, script: SCRIPT}
nodes:
  agent:
    type: llm.agent
    inputs: {task: $inputs.q}
    config: CONFIG
"""
END = ".*\\n$"  # the end of the prompt, where the model continues


@dataclass
class Case:
    name: str
    script: list[dict[str, Any]]
    answer: str | None
    turns: list[dict[str, Any]] | None
    config: str = "{tools: [calculator]}"
    error: str | None = None


CASES = [
    Case(
        "one tool call, then the answer",
        [
            {"match": "Observation: 84" + END, "reply": "Answer: 84"},
            {"match": "Question: 12 x 7\\?" + END, "reply": "Action: calculator\nInput: 12 * 7"},
        ],
        "84",
        [
            {
                "turn": 1,
                "reply": "Action: calculator\nInput: 12 * 7",
                "tool": "calculator",
                "input": "12 * 7",
                "observation": "84",
            },
            {"turn": 2, "reply": "Answer: 84", "answer": "84"},
        ],
    ),
    Case(
        "a small model's shorthand: the action is the input of the only tool",
        [{"match": "Observation: 4" + END, "reply": "Answer: 4"}, {"reply": "Action: 2 + 2"}],
        "4",
        [
            {"turn": 1, "reply": "Action: 2 + 2", "tool": "calculator", "input": "2 + 2", "observation": "4"},
            {"turn": 2, "reply": "Answer: 4", "answer": "4"},
        ],
    ),
    Case(
        "a failing tool and an unknown tool become observations the agent recovers from",
        [
            {"match": "Observation: Error: unknown tool" + END, "reply": "Answer: gave up"},
            {"match": "Observation: Error: tool 'calculator' failed" + END, "reply": "Action: search[kittens]"},
            {"reply": "Action: calculator[two plus two]"},
        ],
        "gave up",
        [
            {
                "turn": 1,
                "reply": "Action: calculator[two plus two]",
                "tool": "calculator",
                "input": "two plus two",
                "error": "tool 'calculator' failed: ValueError: not an arithmetic expression: 'two plus two'",
            },
            {
                "turn": 2,
                "reply": "Action: search[kittens]",
                "tool": "search",
                "input": "kittens",
                "error": "unknown tool 'search'; the tools are calculator",
            },
            {"turn": 3, "reply": "Answer: gave up", "answer": "gave up"},
        ],
        config="{tools: [calculator], max_turns: 3}",
    ),
    Case(
        "a reply with neither action nor answer is told so",
        [{"match": "Error: write Action:" + END, "reply": "Answer: 3"}, {"reply": "I think it is three"}],
        "3",
        [
            {"turn": 1, "reply": "I think it is three", "error": "the reply has neither an Action nor an Answer"},
            {"turn": 2, "reply": "Answer: 3", "answer": "3"},
        ],
    ),
    Case(
        "max_turns without an answer fails the node",
        [{"reply": "Action: calculator[1 + 1]"}],
        None,
        None,
        config="{tools: [calculator], max_turns: 2}",
        error="no answer after 2 turns (calculator: 2; calculator: 2)",
    ),
    Case(
        "on_limit: stop returns an empty answer and the turns",
        [{"reply": "Action: calculator[1 + 1]"}],
        "",
        [
            {
                "turn": 1,
                "reply": "Action: calculator[1 + 1]",
                "tool": "calculator",
                "input": "1 + 1",
                "observation": "2",
            },
        ],
        config="{tools: [calculator], max_turns: 1, on_limit: stop}",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_agent(case: Case) -> None:
    flow = FLOW.replace("SCRIPT", json.dumps(case.script)).replace("CONFIG", case.config)
    result, store = await run_flow(flow, {"q": "12 x 7?"})
    if case.error:
        assert result.status == "failed" and case.error in str(result.error)
        assert store.steps(result.run_id)[0].error_kind == "max_turns"
        return
    assert result.outputs == {"answer": case.answer, "turns": case.turns}, result.error
    assert len(store.calls(result.run_id)) == len(case.turns or [])


async def test_demos_and_tools_are_in_the_prompt() -> None:
    config = "{tools: [calculator], demos: [{task: 1 plus 2, steps: [{tool: calculator, input: 1 + 2, observation: '3'}], answer: '3'}]}"
    flow = FLOW.replace("SCRIPT", '[{reply: "Answer: 5"}]').replace("CONFIG", config)
    result, store = await run_flow(flow, {"q": "2 + 3?"})
    prompt = store.calls(result.run_id)[0].request["prompt"]
    assert "- calculator(expression: str): Evaluate an arithmetic expression" in prompt
    assert (
        "Question: 1 plus 2\nAction: calculator\nInput: 1 + 2\nObservation: 3\nAnswer: 3\n\nQuestion: 2 + 3?\n"
        in prompt
    )


class ToolCallingModel:
    """A provider with function calling: asks for a tool once, then answers."""

    def __init__(self) -> None:
        self.seen: list[list[Message]] = []

    def supports_tools(self) -> bool:
        return True

    async def complete(self, **_: Any) -> Completion:
        raise AssertionError("the text protocol must not be used")

    async def complete_with_tools(
        self, *, messages: list[Message], tools: list[dict[str, Any]], max_tokens: int | None = None
    ) -> ToolReply:
        self.seen.append(list(messages))
        assert tools[0]["function"]["name"] == "calculator"
        assert tools[0]["function"]["parameters"]["required"] == ["expression"]
        done = Completion("", 1, 1)
        if len(self.seen) == 1:
            return ToolReply("", [ToolCall("calculator", {"expression": "6 * 7"}, "c1")], done)
        return ToolReply("It is 42.", [], done)


async def test_function_calling_where_the_model_supports_it() -> None:
    model = ToolCallingModel()
    node = Agent(Agent.Config(tools=["calculator"]))
    ctx = NodeContext(run_id="r", node_id="agent", flow_dir=Path("."), llm=model)
    out = await node.run(TemplateInputs(task="6 times 7?"), ctx)
    assert out.answer == "It is 42."
    assert out.turns == [
        {"turn": 1, "reply": "", "tool": "calculator", "input": {"expression": "6 * 7"}, "observation": "42"},
        {"turn": 2, "reply": "It is 42.", "answer": "It is 42."},
    ]
    assert 'calculator({"expression": "6 * 7"}) returned: 42' in model.seen[1][-1].content


async def test_function_calling_through_the_engine_and_the_model_client() -> None:
    """A scripted model that answers with tool calls drives the function-calling path end to end."""
    text = """
inputs: {q: {type: str}}
outputs: {answer: $agent.answer, turns: $agent.turns}
models:
  default:
    model: scripted
    script:
      - {match: "returned: 84", reply: "It is 84."}
      - {tool_calls: [{name: calculator, arguments: {expression: "12 * 7"}}]}
nodes:
  agent:
    type: llm.agent
    inputs: {task: $inputs.q}
    config: {tools: [calculator], protocol: auto}
"""
    result, store = await run_flow(text, {"q": "What is 12 times 7?"})
    assert result.status == "succeeded", result.error
    assert result.outputs is not None and result.outputs["answer"] == "It is 84."
    first, second = store.calls(result.run_id)
    offered = first.request["extra"]["tools"]
    assert [t["function"]["name"] for t in offered] == ["calculator"]
    assert second.request["messages"][-1]["content"].endswith("returned: 84")
