"""llm.generate's `messages` input: a value that is not a conversation is refused naming the port
and the shape it takes, at compile time where the wire's type or a literal says so, else at run time."""

from __future__ import annotations

import pytest

from studio.errors import CompileError
from studio.flow.spec import load_flow_text
from studio.runtime.compiler import compile_flow
from tests.nodes.runner import HEADER, run_flow

FLOW = """
inputs: {history: {type: "%s"}}
outputs: {text: $reply.text}
models:
  default: {model: scripted, script: [{reply: fine}]}
nodes:
  reply: {type: llm.generate, inputs: {messages: %s}, config: {prompt: ""}}
"""


async def test_a_list_that_is_not_role_and_content_is_refused_at_run_time_naming_the_port() -> None:
    result, store = await run_flow(FLOW % ("list", "$inputs.history"), {"history": [{"role": "user", "text": "hi"}]})
    assert result.status == "failed"
    step = store.steps(result.run_id)[0]
    assert step.error_kind == "bad_input" and not store.calls(result.run_id)  # nothing was sent
    assert "input 'messages' takes messages | null: a list of {role, content} turns" in str(step.error)
    assert "messages[0].content: Field required" in str(step.error)


async def test_a_conversation_runs() -> None:
    turns = [{"role": "user", "content": "hi"}]
    result, store = await run_flow(FLOW % ("list", "$inputs.history"), {"history": turns})
    assert result.outputs == {"text": "fine"}, result.error
    assert store.calls(result.run_id)[0].request["messages"][-1] == {"role": "user", "content": "hi"}


@pytest.mark.parametrize(
    ("kind", "value", "message"),
    [
        (
            "list[str]",
            "$inputs.history",
            r"\$inputs.history \(list\[str\]\) cannot feed reply.messages \(messages \| null: a list of \{role, content\}",
        ),
        ("str", "$inputs.history", r"cannot feed reply.messages \(messages \| null: a list of \{role, content\} turns"),
        (
            "str",
            "[{role: user, text: hi}]",
            r"reply.messages takes messages \| null: a list of \{role, content\} turns .*messages\[0\].content",
        ),
    ],
)
def test_a_wire_or_literal_whose_type_is_not_a_conversation_is_a_compile_error(
    kind: str, value: str, message: str
) -> None:
    with pytest.raises(CompileError, match=message) as err:
        compile_flow(load_flow_text(HEADER + FLOW % (kind, value)))
    assert err.value.field == "nodes.reply.inputs.messages"
