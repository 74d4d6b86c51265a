"""The trace viewer's logic, without Streamlit: graph, tables, failure and its cause, cost, comparison."""

from __future__ import annotations

import datetime as dt
import shutil
from dataclasses import replace
from pathlib import Path
from xml.etree import ElementTree

import graphviz
import pytest

from studio.store import MemoryStore, SQLiteStore
from studio.store.base import CallRecord, ExperimentRecord, RunFilter, RunRecord, StepRecord
from studio.viewer import (
    compare_rows,
    compare_runs,
    cost_by_model,
    cost_by_node,
    day_filter,
    dot_svg,
    example_rows,
    find_failure,
    human_seconds,
    load_trace,
    node_rows,
    node_summaries,
    page_count,
    parse_step_name,
    run_dot,
    run_rows,
    step_detail,
    step_rows,
    total_cost,
)
from studio.viewer.results import cards
from studio.viewer.trace import Trace
from tests.app.seed import XSS, experiment, nested_run, seed_runs, two_inputs_run


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    db = tmp_path_factory.mktemp("viewer") / "runs.db"
    return db, seed_runs(db)


def _trace(db: Path, run_id: str) -> Trace:
    store = SQLiteStore(db)
    try:
        trace = load_trace(store, run_id)
    finally:
        store.close()
    assert trace is not None
    return trace


def test_step_names_split_into_node_and_iteration() -> None:
    name = parse_step_name("map[2].summarise")
    assert (name.top, name.nested, name.scope, name.leaf) == ("map", True, "map[2]", "summarise")
    assert parse_step_name("call.answer").parts == (("call", None), ("answer", None))
    deep = parse_step_name("loop[1].inner[3].critique")
    assert deep.parts == (("loop", 1), ("inner", 3), ("critique", None)) and deep.scope == "loop[1].inner[3]"
    assert parse_step_name("plain").nested is False
    assert parse_step_name("map[fr.txt].read").parts == (("map", "fr.txt"), ("read", None))
    assert parse_step_name("map[fr.txt].read").scope == "map[fr.txt]"
    assert parse_step_name("odd]x").parts == (("odd]x", None),)


def test_failed_run_names_the_failing_node_and_its_upstream_cause(real: tuple[Path, dict[str, str]]) -> None:
    db, runs = real
    trace = _trace(db, runs["failing_a"])
    failure = find_failure(trace)
    assert failure is not None and failure.step is not None
    assert failure.step.node == "answer" and failure.kind == "auth" and "auth" in failure.error
    assert failure.cause is not None and failure.cause.node == "draft"
    assert failure.cause.output == {"text": f"draft about {XSS}<b>bold</b>"}
    assert failure.upstream == ("draft",)


def test_graph_is_compiled_from_the_stored_flow_and_colored_by_status(real: tuple[Path, dict[str, str]]) -> None:
    db, runs = real
    trace = _trace(db, runs["failing_a"])
    assert trace.graph.problem is None and list(trace.graph.nodes) == ["note", "draft", "answer"]
    assert sorted(trace.graph.edges()) == [("draft", "answer", True), ("note", "draft", True)]
    dot = run_dot(trace, failing="answer", cause="draft")
    assert "answer -> " not in dot and "note -> draft" in dot and "draft -> answer" in dot
    assert 'fillcolor="#ffcdd2"' in dot and 'fillcolor="#c8e6c9"' in dot  # failed, succeeded
    assert "$0.000018" in dot  # cost on the node


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot (apt-get install graphviz)")
def test_the_graph_picture_is_lean_svg_with_every_label_and_color(real: tuple[Path, dict[str, str]]) -> None:
    db, runs = real
    dot = run_dot(_trace(db, runs["failing_a"]), failing="answer", cause="draft")
    full = str(graphviz.Source(dot).pipe(format="svg", encoding="utf-8"))
    svg = dot_svg(dot)
    assert svg is not None and len(svg) < 0.8 * len(full)
    root = ElementTree.fromstring(svg)  # still well-formed SVG
    labels = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert labels == [t.text for t in ElementTree.fromstring(full).iter("{http://www.w3.org/2000/svg}text")]
    assert {"note", "draft", "answer"} <= set(labels)
    assert "#ffcdd2" in svg and "#c8e6c9" in svg and "<title>" not in svg and "<!--" not in svg
    group = root.find("{http://www.w3.org/2000/svg}g")
    assert group is not None and group.get("font-family") == "Helvetica,sans-Serif"  # said once, inherited


def test_node_table_and_step_detail_show_prompts_tokens_and_cost(real: tuple[Path, dict[str, str]]) -> None:
    db, runs = real
    trace = _trace(db, runs["failing_a"])
    rows = {r["node"]: r for r in node_rows(trace)}
    assert rows["draft"]["status"] == "succeeded" and rows["draft"]["model"] == "scripted"
    assert rows["draft"]["tokens"] > 0 and rows["draft"]["cost_usd"] > 0
    assert rows["answer"]["status"] == "failed" and "auth" in rows["answer"]["error"]
    detail = step_detail(trace, "answer")
    assert detail is not None and detail.step.inputs == {"draft": f"draft about {XSS}<b>bold</b>"}
    (call,) = detail.calls
    assert [m.role for m in call.messages] == ["system", "user"]
    assert call.messages[1].content.startswith("ANSWER using draft")
    assert call.error is not None and call.response is None and call.settings["max_tokens"] > 0
    assert step_detail(trace, "missing") is None


def test_compare_two_runs_of_the_same_flow(real: tuple[Path, dict[str, str]]) -> None:
    db, runs = real
    a, b = _trace(db, runs["chain_a"]), _trace(db, runs["chain_b"])
    diffs = {d.step: d for d in compare_runs(a, b)}
    assert list(diffs) == ["ask", "write", "shout"]
    assert diffs["ask"].changed == ("inputs", "outputs")
    assert "outputs" in diffs["write"].changed
    rows = compare_rows(list(diffs.values()))
    assert rows[0]["status A"] == rows[0]["status B"] == "succeeded" and rows[0]["differs"] == "inputs, outputs"
    same = compare_runs(a, a)
    assert all(d.changed == () for d in same)


def test_cost_through_maps_loops_and_sub_flows_equals_the_model_calls() -> None:
    store = MemoryStore()
    trace = load_trace(store, nested_run(store))
    assert trace is not None
    calls_total = sum(c.cost_usd for c in trace.calls)
    by_node = {r.key: round(r.cost_usd, 9) for r in cost_by_node(trace)}
    assert by_node == {"pick": 0.032, "ask": 0.016, "refine": 0.012, "summaries": 0.003}
    assert sum(r.cost_usd for r in cost_by_node(trace)) == pytest.approx(calls_total)
    assert sum(r.cost_usd for r in cost_by_node(trace, per_step=True)) == pytest.approx(calls_total)
    by_model = {r.key: round(r.cost_usd, 9) for r in cost_by_model(trace)}
    assert by_model == {"openai/gpt-4o-mini": 0.044, "scripted": 0.019}
    assert total_cost(trace) == pytest.approx(calls_total) == pytest.approx(0.063)
    summaries = {s.node: s for s in node_summaries(trace)}
    assert summaries["summaries"].iterations == 2 and summaries["summaries"].steps == 3
    assert summaries["summaries"].cost_usd == pytest.approx(0.003)  # the map step's own total is not added again
    assert summaries["pick"].calls == 2 and summaries["ask"].iterations == 0


def test_a_real_map_over_a_model_costs_add_up(real: tuple[Path, dict[str, str]]) -> None:
    db, runs = real
    trace = _trace(db, runs["mapped"])
    assert [r["iteration"] for r in step_rows(trace, "each")] == ["each[0]", "each[1]", None]
    items = sum(c.cost_usd for c in trace.calls if c.node.startswith("each["))
    by_node = {r.key: r.cost_usd for r in cost_by_node(trace)}
    assert set(by_node) == {"each", "polish"} and by_node["each"] == pytest.approx(items) and items > 0
    assert sum(by_node.values()) == pytest.approx(total_cost(trace)) == pytest.approx(trace.run.cost_usd)
    per_step = {r.key for r in cost_by_node(trace, per_step=True)}
    assert per_step == {"each[0].summarise", "each[1].summarise", "polish"}
    assert {s.node: s.iterations for s in node_summaries(trace)} == {"each": 2, "polish": 0}


def test_sub_flow_steps_are_grouped_per_iteration_and_drawn_from_the_spec() -> None:
    store = MemoryStore()
    trace = load_trace(store, nested_run(store))
    assert trace is not None
    assert trace.graph.problem is not None and "spec" in trace.graph.problem
    assert sorted(trace.graph.edges()) == [
        ("ask", "pick", True),
        ("refine", "ask", True),
        ("summaries", "refine", True),
    ]
    rows = step_rows(trace, "refine")
    assert [(r["step"], r["iteration"]) for r in rows] == [
        ("refine[0].critique", "refine[0]"),
        ("refine[1].critique", "refine[1]"),
        ("refine", None),
    ]
    assert "summaries\\ntest.map · succeeded" in run_dot(trace).replace("\n", "\\n")


def test_failure_inside_a_map_item_points_at_the_same_items_earlier_step() -> None:
    store = MemoryStore()
    trace = load_trace(store, nested_run(store, "nested-bad", fail=True))
    assert trace is not None
    failure = find_failure(trace)
    assert failure is not None and failure.step is not None
    assert failure.step.node == "summaries[1].summarise"
    assert failure.cause is not None and failure.cause.node == "summaries[1].fetch"
    assert failure.cause.output == {"text": "page two"}
    assert {s.node: s.status for s in node_summaries(trace)}["summaries"] == "failed"


def test_cause_is_the_producer_of_a_rejected_input() -> None:
    failure = find_failure(two_inputs_run(MemoryStore(), "input left: Input should be a valid string", "bad_input"))
    assert failure is not None and failure.cause is not None
    assert failure.cause.node == "a" and failure.cause.output == {"text": "a1"} and "left" in failure.cause.reason
    assert failure.upstream == ("a", "b")


def test_cause_prefers_a_skipped_upstream_node() -> None:
    failure = find_failure(two_inputs_run(MemoryStore(), "boom", "exception", skip_b=True))
    assert failure is not None and failure.cause is not None
    assert failure.cause.node == "b" and "skipped" in failure.cause.reason


def test_node_reading_only_run_inputs_points_at_the_inputs() -> None:
    store = MemoryStore()
    flow = "flowstudio: 1\nname: one\ninputs: {t: {type: str}}\nnodes:\n  only: {type: text.template, inputs: {t: $inputs.t}, config: {template: '{{ t }}'}}\n"
    store.create_run(RunRecord(run_id="one", flow="one", flow_path=None, flow_hash="h", inputs={"t": "hi"}), flow)
    store.finish_step("one", StepRecord(node="only", status="failed", error="bad"), [])
    store.finish_run("one", status="failed", outputs=None, error="x")
    trace = load_trace(store, "one")
    assert trace is not None
    failure = find_failure(trace)
    assert failure is not None and failure.cause is not None
    assert failure.cause.node == "inputs" and failure.cause.output == {"t": "hi"}


def test_run_without_flow_text_is_drawn_from_its_steps() -> None:
    store = MemoryStore()
    store.create_run(RunRecord(run_id="r", flow="f", flow_path=None, flow_hash="h", inputs={}))
    store.finish_step("r", StepRecord(node="x", status="succeeded"), [])
    store.finish_step("r", StepRecord(node="y[0].z", status="succeeded"), [])
    trace = load_trace(store, "r")
    assert trace is not None and list(trace.graph.nodes) == ["x", "y"] and trace.graph.problem
    assert find_failure(trace) is None
    assert load_trace(store, "missing") is None


def test_viewing_executes_nothing(real: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    import studio.models
    import studio.runtime.engine

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the viewer ran something")

    monkeypatch.setattr(studio.runtime.engine.Engine, "run", refuse)
    monkeypatch.setattr(studio.models, "client_for", refuse)
    monkeypatch.setattr(studio.runtime.engine, "client_for", refuse)
    db, runs = real
    trace = _trace(db, runs["failing_a"])
    run_dot(trace)
    node_rows(trace)
    find_failure(trace)
    step_detail(trace, "answer")


def test_runs_list_rows_pages_and_day_filter() -> None:
    run = RunRecord(run_id="r", flow="f", flow_path=None, flow_hash="h", inputs={}, status="failed", error="x " * 80,
                    started_at="2026-01-01T00:00:00+00:00", ended_at="2026-01-01T00:00:02.500000+00:00", steps=3)  # fmt: skip
    (row,) = run_rows([run])
    assert (row["run"], row["seconds"], row["steps"], row["started"]) == ("r", 2.5, 3, "2026-01-01 00:00:00")
    assert len(row["error"]) == 80
    (fine,) = run_rows([replace(run, status="succeeded", error=None)])
    assert fine["error"] == "—", "a dash, not the word None"
    assert [page_count(n) for n in (0, 1, 50, 51, 10_000)] == [1, 1, 1, 2, 200]
    assert [human_seconds(s) for s in (None, 0.5, 185, 7440, 90000)] == [
        "-",
        "0.50 s",
        "3 min 5 s",
        "2 h 4 min",
        "1 d 1 h",
    ]
    where = day_filter("f", None, dt.date(2026, 1, 1), dt.date(2026, 1, 31))
    assert where == RunFilter(flow="f", since="2026-01-01", until="2026-02-01")


def test_examples_table_carries_scores_and_outputs_as_text() -> None:
    store = MemoryStore()
    ids = experiment(store)
    record = store.get_experiment("exp1")
    assert record is not None
    rows = example_rows(record, store.runs_of_experiment("exp1"))
    assert [(r["run"], r["score"], r["status"]) for r in rows] == [
        (ids[0], 1.0, "succeeded"),
        (ids[1], 0.0, "succeeded"),
        (ids[2], None, "failed"),
    ]
    assert XSS in rows[0]["outputs"]


def test_calls_without_steps_still_count() -> None:
    store = MemoryStore()
    store.create_run(RunRecord(run_id="c", flow="f", flow_path=None, flow_hash="h", inputs={}))
    call = CallRecord(node="x", model="m", request={"prompt": "p"}, response="r", cost_usd=0.5)
    store.finish_step("c", StepRecord(node="x", status="succeeded", cost_usd=0.5), [call])
    trace = load_trace(store, "c")
    assert trace is not None and total_cost(trace) == 0.5
    detail = step_detail(trace, "x")
    assert detail is not None and detail.calls[0].messages[0].role == "prompt"


def test_the_tokens_card_says_how_many_calls_the_cache_answered() -> None:
    """A batch run again is answered from the LLM cache: 0 tokens, and the card says why."""
    summary = {"score": 1.0, "examples": 2, "errors": 0, "tokens": 0, "cost_usd": 0.0, "calls": 4, "cache_hits": 4}
    tokens = next(
        card for card in cards(ExperimentRecord("e", "batch", "qa", summary=summary), []) if card[0] == "Tokens"
    )
    assert tokens == ("Tokens", "0", "4 of 4 model calls from the LLM cache")
    fresh = {**summary, "tokens": 90, "cache_hits": 0}
    assert (
        next(c for c in cards(ExperimentRecord("e", "batch", "qa", summary=fresh), []) if c[0] == "Tokens")[2] is None
    )
