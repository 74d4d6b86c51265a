"""`llm.structured` with `strategy: cascade`: the student's sampled objects vote, the teacher
answers when they disagree (or never validate), its object is kept and recalled as a demo, and
each call is priced by its alias; the optimizer proposes the cascade on a dear alias."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodes.llm_structured import Structured
from studio.errors import CompileError
from studio.flow.spec import load_flow_text
from studio.optimize.candidates import TunableNode
from studio.optimize.moves import NodeMoves, cascade_moves, strategy_moves
from studio.reviews.cascade_seed import seed_from_reviews
from studio.runtime.compiler import Plan, compile_flow
from studio.runtime.engine import Engine
from studio.runtime.memory import book_for
from studio.store import MemoryStore, SQLiteStore
from studio.store.feedback import FeedbackRecord
from tests.nodes.runner import HEADER, run_flow

FLOW = """
inputs: {question: {type: str}}
outputs: {data: $ask.data, city: $ask.city}
models:
  default:
    model: scripted
    script: STUDENT
  big:
    model: scripted
    input_cost_per_token: 0.01
    output_cost_per_token: 0.01
    script: [{reply: 'Paris"}'}]
nodes:
  ask:
    type: llm.structured
    inputs: {question: $inputs.question}
    config: {prompt: "{{ question }}", fields: {city: str}, strategy: cascade, teacher: big, retries: 0,
             samples: 3, agree: 2, recall: 2}
"""
LEARNING = [
    {"match": 'Paris"}[\\s\\S]*JSON: \\{"city": "$', "reply": 'Paris"}'},  # the teacher's object as a demo
    {"replies": ['Lyon"}', 'Nice"}', 'Metz"}']},
]


def _plan(student: list[dict[str, str]]) -> Plan:
    return compile_flow(load_flow_text(HEADER + FLOW.replace("STUDENT", json.dumps(student))))


async def test_disagreeing_objects_escalate_and_the_kept_object_lets_the_student_answer_next() -> None:
    store = MemoryStore()
    engine = Engine(store)
    plan = _plan(LEARNING)
    first = await engine.run(plan, {"question": "Capital of France?"})
    assert first.outputs == {"data": {"city": "Paris"}, "city": "Paris"}, first.error
    calls = store.calls(first.run_id)
    assert [c.request.get("cascade") for c in calls] == [None, None, None, "teacher"]
    assert "0 of 3" not in str(calls[-1].request) and "1 of 3 samples agreed (2 needed)" in str(calls[-1].request)
    kept = engine.memories.of("scenario", "ask").examples
    assert [(k.query, k.inputs, json.loads(k.output)) for k in kept] == [
        ("Capital of France?", {"question": "Capital of France?"}, {"city": "Paris"})
    ]

    again = await engine.run(plan, {"question": "The capital of France?"})
    assert again.outputs == {"data": {"city": "Paris"}, "city": "Paris"}, again.error
    calls = store.calls(again.run_id)
    assert len(calls) == 3 and all(c.cost_usd == 0 for c in calls)  # the student alone, free
    assert 'Capital of France?\nJSON: {"city": "Paris"}' in calls[0].request["prompt"]  # the kept object as a demo


async def test_samples_that_never_validate_do_not_agree_and_the_teacher_answers() -> None:
    flow = HEADER + FLOW.replace("STUDENT", json.dumps([{"reply": "???"}]))
    result, store = await run_flow(flow[len(HEADER) :], {"question": "Capital of France?"})
    assert result.outputs == {"data": {"city": "Paris"}, "city": "Paris"}, result.error
    calls = store.calls(result.run_id)
    assert [c.cost_usd > 0 for c in calls] == [False, False, False, True]
    assert "3 gave no valid answer" in calls[-1].request["why"]


async def test_agreeing_objects_never_call_the_teacher() -> None:
    result, store = await run_flow(FLOW.replace("STUDENT", json.dumps([{"reply": 'Rome"}'}])), {"question": "Italy?"})
    assert result.outputs == {"data": {"city": "Rome"}, "city": "Rome"}, result.error
    assert [c.cost_usd for c in store.calls(result.run_id)] == [0, 0, 0]


def test_a_cascade_without_a_teacher_is_a_compile_error() -> None:
    flow = HEADER + FLOW.replace("STUDENT", "[]").replace("teacher: big, ", "")
    with pytest.raises(CompileError, match="teacher"):
        compile_flow(load_flow_text(flow))


def test_the_optimizer_proposes_no_strategy_the_node_does_not_run() -> None:
    plan = _plan([{"reply": 'Rome"}'}])
    node = plan.nodes["ask"].node
    assert isinstance(node, Structured) and node.tunable is not None
    tunable = TunableNode("ask", "llm.structured", {"prompt": "{{ question }}", "fields": {"city": "str"}}, "big", {})
    plain = NodeMoves(tunable, dict(tunable.config), "big", [], [], [])
    assert strategy_moves(plain) == []  # ensemble, reasoning and reflect are not `llm.structured`'s
    assert [m.description for m in cascade_moves(plain, {"big": 0.02, "default": 0.0})] == [
        "cascade: default answers, big when it is unsure"
    ]


async def test_a_good_reviewed_run_seeds_its_object_as_json(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "flowstudio.db")
    plan = _plan([{"reply": 'Rome"}'}])
    run = await Engine(store).run(plan, {"question": "Italy?"})
    store.add_feedback(FeedbackRecord(run.run_id, score=1.0, value="good"))
    assert seed_from_reviews(store, plan).examples == 1
    kept = book_for(store).examples("scenario", "ask")
    store.close()
    assert [(e.query, json.loads(e.output)) for e in kept] == [("Italy?", {"city": "Rome"})]
