"""`strategy: cascade`: the student answers when its samples agree, else the teacher, whose answer
is kept and recalled as a demo for the nearest later questions; each call is priced by its alias."""

from __future__ import annotations

import pytest

from studio.cli.reports import cascade_split
from studio.errors import CompileError
from studio.flow.spec import load_flow_text
from studio.node import TeacherExample
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine
from studio.runtime.memory import MemoryBook, NodeMemory
from studio.store import MemoryStore
from tests.nodes.runner import HEADER

FLOW = """
inputs: {question: {type: str}}
outputs: {answer: $ask.text}
models:
  default:
    model: scripted
    script:
      - {match: "capital of France[\\\\s\\\\S]*capital of France", reply: Paris}
      - {match: "two plus two", reply: four}
      - {replies: [Lyon, Nice, Metz]}
  big:
    model: scripted
    input_cost_per_token: 0.01
    output_cost_per_token: 0.01
    script: [{reply: Paris}]
nodes:
  ask:
    type: llm.generate
    inputs: {question: $inputs.question}
    config: {prompt: "{{ question }}", strategy: cascade, teacher: %s, samples: 3, agree: 2, recall: 2}
"""


async def test_disagreeing_samples_escalate_and_the_kept_answer_lets_the_student_answer_next() -> None:
    store = MemoryStore()
    engine = Engine(store)
    plan = compile_flow(load_flow_text(HEADER + FLOW % "big"))
    first = await engine.run(plan, {"question": "What is the capital of France?"})
    assert first.outputs == {"answer": "Paris"}, first.error
    calls = store.calls(first.run_id)
    assert [c.model for c in calls].count("scripted") == 4  # three student samples, one teacher call
    teacher = [c for c in calls if c.cost_usd > 0]
    assert len(teacher) == 1 and teacher[0].response == "Paris"
    assert [c.request.get("cascade") for c in calls] == [None, None, None, "teacher"]  # who answered
    split = cascade_split(calls)
    assert split.startswith(
        f"cascade: teacher 1 call(s) ${teacher[0].cost_usd:.6f}; student and other calls 3 $0.000000"
    )
    kept = engine.memories.of("scenario", "ask").examples
    assert kept == [
        TeacherExample("What is the capital of France?", {"question": "What is the capital of France?"}, "Paris")
    ]

    again = await engine.run(plan, {"question": "Tell me the capital of France"})
    assert again.outputs == {"answer": "Paris"}, again.error
    calls = store.calls(again.run_id)
    assert len(calls) == 3 and all(c.cost_usd == 0 for c in calls)  # the student alone, free
    assert cascade_split(calls) == ""
    assert "What is the capital of France?" in str(calls[0].request)  # the teacher's answer as a demo


async def test_agreeing_samples_never_call_the_teacher() -> None:
    store = MemoryStore()
    engine = Engine(store)
    plan = compile_flow(load_flow_text(HEADER + FLOW % "big"))
    result = await engine.run(plan, {"question": "What is two plus two?"})
    assert result.outputs == {"answer": "four"}, result.error
    assert all(c.cost_usd == 0 for c in store.calls(result.run_id))
    assert engine.memories.of("scenario", "ask").examples == []


def test_an_unknown_teacher_alias_is_a_compile_error_with_a_suggestion() -> None:
    with pytest.raises(
        CompileError, match=r"model alias 'bgi' is not defined under `models:` \(did you mean 'big'\?\)"
    ):
        compile_flow(load_flow_text(HEADER + FLOW % "bgi"))


def test_a_cascade_without_a_teacher_is_a_compile_error() -> None:
    with pytest.raises(CompileError, match="needs `teacher`"):
        compile_flow(load_flow_text(HEADER + FLOW.replace("teacher: %s, ", "")))


def test_the_memory_recalls_the_nearest_questions_first() -> None:
    memory = NodeMemory(MemoryBook(), "f", "n", run_id=None, version=None, warming=False)
    for query, output in [
        ("refund my order", "billing"),
        ("app crashes on start", "bug"),
        ("order refund late", "billing"),
    ]:
        memory.remember(TeacherExample(query, {"text": query}, output))
    nearest = memory.nearest("the app crashes", 2)
    assert [e.output for e in nearest] == ["bug"]  # only examples sharing a word
    assert [e.query for e in memory.nearest("refund for my order", 1)] == ["refund my order"]
    assert memory.nearest("unrelated words", 3) == []
