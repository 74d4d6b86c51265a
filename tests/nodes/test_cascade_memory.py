"""Cascades keep their teacher's answers and decisions in the store: a second run (another engine,
the same SQLite file) recalls the first run's teacher answer; a classifier escalates when its
samples disagree or its confidence is low; each call's decision records who answered, why, and
what each model cost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nodes import strategies
from studio.flow.spec import load_flow_text
from studio.node import LLM, NodeContext, TeacherExample
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine
from studio.runtime.memory import MemoryBook, NodeMemory
from studio.store import MemoryStore
from studio.store.sqlite import SQLiteStore
from studio.store.teacher import KeptExample, SQLiteBook
from tests.nodes.runner import HEADER
from tests.nodes.test_cascade import FLOW

CLASSIFY = """
inputs: {text: {type: str}}
outputs: {label: $pick.label}
models:
  default:
    model: scripted
    script:
      - {match: "refund[\\\\s\\\\S]*refund", reply: billing}
      - {replies: [bug, billing, other]}
  big:
    model: scripted
    input_cost_per_token: 0.001
    output_cost_per_token: 0.001
    script: [{reply: billing}]
nodes:
  pick:
    type: llm.classify
    inputs: {text: $inputs.text}
    config: {labels: [billing, bug, other], strategy: cascade, teacher: big, samples: 3, agree: 2, recall: 2}
"""


async def test_a_second_engine_on_the_same_file_recalls_the_first_runs_teacher_answer(tmp_path: Path) -> None:
    plan = compile_flow(load_flow_text(HEADER + FLOW % "big"))
    store = SQLiteStore(tmp_path / "runs.db")
    first = await Engine(store).run(plan, {"question": "What is the capital of France?"})
    assert first.outputs == {"answer": "Paris"}, first.error
    store.close()

    store = SQLiteStore(tmp_path / "runs.db")
    engine = Engine(store)
    [kept] = engine.memories.book.examples("scenario")
    assert (kept.node, kept.query, kept.output, kept.run_id) == (
        "ask",
        "What is the capital of France?",
        "Paris",
        first.run_id,
    )
    assert kept.version == store.get_run(first.run_id).version  # type: ignore[union-attr]
    again = await engine.run(plan, {"question": "Tell me the capital of France"})
    assert again.outputs == {"answer": "Paris"}, again.error
    calls = store.calls(again.run_id)
    assert len(calls) == 3 and all(c.cost_usd == 0 for c in calls)  # the student alone
    assert "What is the capital of France?" in str(calls[0].request)  # the first run's teacher answer
    first_call, second_call = engine.memories.book.decisions("scenario")
    assert (first_call.by, first_call.reason, first_call.agreeing) == ("teacher", "1 of 3 samples agreed (2 needed)", 1)
    assert first_call.teacher_cost_usd > 0 and first_call.student_cost_usd == 0
    assert (second_call.by, second_call.agreeing, second_call.run_id) == ("student", 3, again.run_id)
    [teacher] = [c for c in store.calls(first.run_id) if c.request.get("cascade") == "teacher"]
    assert teacher.request["why"] == "1 of 3 samples agreed (2 needed)"  # the trace says why
    store.close()


def test_sqlite_retrieval_ranks_by_bm25_within_the_node_and_replaces_a_repeated_question(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    book = SQLiteBook(store.conn)
    for node, query, output in [
        ("n", "refund my order", "billing"),
        ("n", "app crashes on start", "bug"),
        ("n", "order refund late", "billing"),
        ("other", "app crashes again", "elsewhere"),
        ("n", "refund my order", "refunds"),
    ]:
        book.remember(KeptExample("f", node, query, {"text": query}, output))
    assert [e.output for e in book.nearest("f", "n", "the app crashes!", 3)] == ["bug"]
    assert [e.output for e in book.nearest("f", "n", 'refund "my" order OR NOT', 1)] == ["refunds"]
    assert book.nearest("f", "n", "unrelated words", 3) == []
    assert len(book.examples("f", "n")) == 3
    store.close()


async def test_a_classifier_escalates_when_its_samples_disagree_and_learns_from_the_teacher() -> None:
    store = MemoryStore()
    engine = Engine(store)
    plan = compile_flow(load_flow_text(HEADER + CLASSIFY))
    first = await engine.run(plan, {"text": "I want a refund"})
    assert first.outputs == {"label": "billing"}, first.error
    calls = store.calls(first.run_id)
    assert [c.request.get("cascade") for c in calls] == [None, None, None, "teacher"]
    again = await engine.run(plan, {"text": "refund please"})
    assert again.outputs == {"label": "billing"}, again.error
    assert all(c.cost_usd == 0 for c in store.calls(again.run_id))
    by = [(d.by, d.agreeing) for d in engine.memories.book.decisions("scenario")]
    assert by == [("teacher", 1), ("student", 3)]


async def test_warming_asks_the_teacher_alone_and_keeps_every_answer() -> None:
    store = MemoryStore()
    engine = Engine(store)
    engine.memories.warming = True
    plan = compile_flow(load_flow_text(HEADER + FLOW % "big"))
    result = await engine.run(plan, {"question": "What is two plus two?"})
    assert result.outputs == {"answer": "Paris"}  # the (scripted) teacher's answer
    [call] = store.calls(result.run_id)
    assert call.request["cascade"] == "teacher" and call.request["why"] == "warming the memory"
    assert [e.output for e in engine.memories.book.examples("scenario")] == ["Paris"]


class _Free:
    async def complete(self, **request: Any) -> Any:
        raise AssertionError("not called")


def _context(memory: NodeMemory) -> NodeContext:
    teacher_calls: list[str] = []

    def llm_for(alias: str, why: str = "") -> LLM:
        teacher_calls.append(why)
        return _Free()  # type: ignore[return-value]

    return NodeContext("r", "n", Path("."), _Free(), llm_for=llm_for, memory=memory)  # type: ignore[arg-type]


async def test_low_confidence_escalates_even_when_the_samples_agree() -> None:
    memory = NodeMemory(MemoryBook(), "f", "n", run_id="r", version="v1", warming=False)
    plan = strategies.Cascade("big", samples=2, agree=2, recall=2, output="label", confidence=0.7)

    def student(confidence: float) -> strategies.Student:
        async def ask(demos: list[dict[str, Any]], llm: LLM) -> list[strategies.Vote]:
            return [strategies.Vote("bug", confidence), strategies.Vote("bug", confidence)]

        return ask

    async def teacher(llm: LLM) -> str:
        return "billing"

    sure = await strategies.decide(
        plan, _context(memory), "app crashed", {"text": "app crashed"}, student(0.9), teacher
    )
    assert (sure.answer, sure.by, sure.confidence) == ("bug", "student", 0.9)
    unsure = await strategies.decide(plan, _context(memory), "app froze", {"text": "app froze"}, student(0.4), teacher)
    assert (unsure.answer, unsure.by) == ("billing", "teacher")
    assert unsure.reason == "2 of 2 samples agreed (2 needed), confidence 0.40 (threshold 0.70)"
    assert memory.examples == [TeacherExample("app froze", {"text": "app froze"}, "billing")]
    assert [(d.by, d.confidence, d.version) for d in memory.book.decisions("f")] == [
        ("student", 0.9, "v1"),
        ("teacher", 0.4, "v1"),
    ]


async def test_a_postgresql_store_keeps_the_teacher_answers_for_the_next_engine(postgres_url: str) -> None:
    from studio.store.postgres import PostgresStore

    plan = compile_flow(load_flow_text(HEADER + FLOW % "big"))
    store = PostgresStore(postgres_url)
    try:
        first = await Engine(store).run(plan, {"question": "What is the capital of France?"})
        assert first.outputs == {"answer": "Paris"}, first.error
        engine = Engine(store)  # a new engine: nothing kept in the process
        again = await engine.run(plan, {"question": "Tell me the capital of France"})
        assert again.outputs == {"answer": "Paris"}, again.error
        assert all(c.cost_usd == 0 for c in store.calls(again.run_id))
        assert [d.by for d in engine.memories.book.decisions("scenario")] == ["teacher", "student"]
        book = engine.memories.book
        book.remember(KeptExample("scenario", "ask", "What is the capital of France?", {}, "Paris!"))
        assert [e.output for e in book.examples("scenario", "ask")] == ["Paris!"]  # replaced
        assert book.nearest("scenario", "ask", "nothing alike", 2) == []
    finally:
        store.close()


def test_reading_a_store_that_never_ran_a_cascade_makes_no_table(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    book = SQLiteBook(store.conn)
    assert book.decisions("f") == [] and book.examples("f") == [] and book.nearest("f", "n", "a question", 2) == []
    tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "teacher_examples" not in tables and "cascade_calls" not in tables
    store.close()


def test_db_migrate_copies_the_teacher_book_to_postgresql_once(tmp_path: Path, postgres_url: str) -> None:
    from studio.store.migrate import copy_store
    from studio.store.postgres import PostgresStore
    from studio.store.postgres_teacher import PostgresBook
    from studio.store.teacher import Decision

    source = SQLiteStore(tmp_path / "runs.db")
    book = SQLiteBook(source.conn)
    book.remember(KeptExample("f", "n", "refund my order", {"text": "refund my order"}, "billing", "v1", "r1"))
    book.note(Decision("f", "n", "teacher", "1 of 3 samples agreed (2 needed)", 1, 3, None, 0.0, 0.01, "r1", "v1"))
    target = PostgresStore(postgres_url)
    try:
        copy_store(source, target)
        copy_store(source, target)  # a second copy adds nothing
        copied = PostgresBook(target)
        assert copied.examples("f") == book.examples("f")
        assert copied.decisions("f") == book.decisions("f")
        assert [e.output for e in copied.nearest("f", "n", "my refund", 1)] == ["billing"]
    finally:
        target.close()
        source.close()
