"""Runs for the viewer's tests: real ones made with the scripted model, and hand-made sub-flow traces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from studio.runtime.runner import run_flow
from studio.store.base import CallRecord, ExperimentRecord, RunRecord, StepRecord, StepStatus, Store
from studio.viewer import load_trace
from studio.viewer.trace import Trace

FLOWS = Path(__file__).resolve().parent / "flows"
XSS = "<script>window.__pwned = 1</script>"

NESTED_FLOW = """\
flowstudio: 1
name: nested
inputs:
  docs: {type: "list[str]"}
outputs:
  best: $pick.text
models:
  default: {model: scripted, script: [{reply: ok}]}
nodes:
  summaries:
    type: test.map
    inputs: {items: $inputs.docs}
  refine:
    type: test.loop
    inputs: {drafts: $summaries.results}
  ask:
    type: test.call
    inputs: {question: $refine.draft}
  pick:
    type: llm.generate
    inputs: {best: $ask.answer}
    config: {prompt: "Pick {{ best }}"}
"""
"""A flow whose structural node types are not installed: the viewer draws it from the spec."""


def seed_runs(db: Path) -> dict[str, str]:
    """Two failing runs, two chain runs, a map over a model; names → run ids."""
    return {
        "failing_a": run_flow(FLOWS / "failing.yaml", {"topic": "tea"}, db=db).run_id,
        "failing_b": run_flow(FLOWS / "failing.yaml", {"topic": "coffee"}, db=db).run_id,
        "chain_a": run_flow(FLOWS / "chain.yaml", {"topic": "sun"}, db=db).run_id,
        "chain_b": run_flow(FLOWS / "chain.yaml", {"topic": "rain", "tone": "grim"}, db=db).run_id,
        "mapped": run_flow(FLOWS / "mapped.yaml", {"docs": ["a b c", "d e"]}, db=db).run_id,
    }


def _at(second: int) -> str:
    return f"2026-03-01T10:00:{second:02d}.000000+00:00"


def _step(
    node: str,
    start: int,
    *,
    status: StepStatus = "succeeded",
    cost: float = 0.0,
    outputs: dict[str, Any] | None = None,
    error: str | None = None,
    error_kind: str | None = None,
) -> StepRecord:
    if outputs is None and status == "succeeded":
        outputs = {"text": f"out of {node}"}
    return StepRecord(
        node=node, status=status, inputs={"in": node}, outputs=outputs, error=error, error_kind=error_kind,
        started_at=_at(start), ended_at=_at(start + 1), cost_usd=cost,
    )  # fmt: skip


def _call(node: str, cost: float, model: str = "scripted") -> CallRecord:
    request = {"messages": [{"role": "user", "content": f"prompt of {node}"}], "temperature": 0.0}
    return CallRecord(node=node, model=model, request=request, response="ok", input_tokens=3, output_tokens=1, cost_usd=cost)  # fmt: skip


def nested_run(store: Store, run_id: str = "nested-ok", *, fail: bool = False) -> str:
    """Map items, loop iterations and a called flow; with `fail`, item 1 of the map fails."""
    store.create_run(
        RunRecord(run_id=run_id, flow="nested", flow_path=None, flow_hash="h", inputs={"docs": ["a", "b"]}, started_at=_at(0)),
        NESTED_FLOW,
    )  # fmt: skip
    if fail:
        store.finish_step(run_id, _step("summaries[0].fetch", 1), [])
        store.finish_step(run_id, _step("summaries[1].fetch", 2, outputs={"text": "page two"}), [])
        store.finish_step(
            run_id, _step("summaries[0].summarise", 3, cost=0.001), [_call("summaries[0].summarise", 0.001)]
        )
        failed = _step("summaries[1].summarise", 4, status="failed", error="auth: no key", error_kind="auth")
        store.finish_step(run_id, failed, [_call("summaries[1].summarise", 0.0)])
        store.finish_step(run_id, _step("summaries", 6, status="failed", error="item 1 failed"), [])
        store.finish_run(run_id, status="failed", outputs=None, error="node 'summaries' failed")
        return run_id
    cheap, dear = "scripted", "openai/gpt-4o-mini"
    plan = [
        ("summaries[0].summarise", 0.001, cheap),
        ("summaries[1].summarise", 0.002, cheap),
        ("refine[0].critique", 0.004, dear),
        ("refine[1].critique", 0.008, dear),
        ("ask.answer", 0.016, cheap),
        ("pick", 0.032, dear),
    ]
    for number, (node, cost, model) in enumerate(plan[:2], start=1):
        store.finish_step(run_id, _step(node, number, cost=cost), [_call(node, cost, model)])
    store.finish_step(run_id, _step("summaries", 3, cost=0.003, outputs={"results": ["x", "y"]}), [])
    for number, (node, cost, model) in enumerate(plan[2:4], start=4):
        store.finish_step(run_id, _step(node, number, cost=cost), [_call(node, cost, model)])
    store.finish_step(run_id, _step("refine", 6, cost=0.012, outputs={"draft": "d", "iterations": 2}), [])
    store.finish_step(run_id, _step("ask.answer", 7, cost=0.016), [_call("ask.answer", 0.016, cheap)])
    store.finish_step(run_id, _step("ask", 8, cost=0.016, outputs={"answer": "a"}), [])
    store.finish_step(run_id, _step("pick", 9, cost=0.032), [_call("pick", 0.02, dear), _call("pick", 0.012, dear)])
    store.finish_run(run_id, status="succeeded", outputs={"best": "a"}, error=None)
    return run_id


def experiment(store: Store, experiment_id: str = "exp1") -> list[str]:
    """A finished batch with three example runs (one failed), scored in its summary."""
    ids = [f"{experiment_id}-r{n}" for n in range(3)]
    store.create_experiment(ExperimentRecord(experiment_id=experiment_id, kind="batch", flow="chain", config={"dataset": "d.jsonl"}))  # fmt: skip
    for number, run_id in enumerate(ids):
        record = RunRecord(run_id=run_id, flow="chain", flow_path=None, flow_hash="h", inputs={"topic": f"t{number}"},
                           started_at=_at(number), experiment_id=experiment_id)  # fmt: skip
        store.create_run(record)
        status = "failed" if number == 2 else "succeeded"
        store.finish_run(run_id, status=status, outputs=None if number == 2 else {"headline": XSS}, error=None)
    store.finish_experiment(experiment_id, {"mean": 0.5, "scores": {ids[0]: 1.0, ids[1]: 0.0}})
    return ids


def two_inputs_run(store: Store, error: str, kind: str, *, skip_b: bool = False) -> Trace:
    """A run of a, b → c where c failed with `error` of `kind` (b skipped when `skip_b`)."""
    flow = """\
flowstudio: 1
name: two
inputs: {x: {type: str}}
nodes:
  a: {type: text.template, inputs: {x: $inputs.x}, config: {template: "a{{ x }}"}}
  b: {type: text.template, inputs: {x: $inputs.x}, config: {template: "b{{ x }}"}}
  c: {type: text.template, inputs: {left: $a.text, right: $b.text}, config: {template: "{{ left }}{{ right }}"}}
"""
    store.create_run(RunRecord(run_id="two", flow="two", flow_path=None, flow_hash="h", inputs={"x": "1"}), flow)
    b = (
        StepRecord(node="b", status="skipped")
        if skip_b
        else StepRecord(node="b", status="succeeded", outputs={"text": "b1"})
    )
    store.finish_step("two", StepRecord(node="a", status="succeeded", outputs={"text": "a1"}), [])
    store.finish_step("two", b, [])
    store.finish_step("two", StepRecord(node="c", status="failed", error=error, error_kind=kind), [])
    store.finish_run("two", status="failed", outputs=None, error="c failed")
    trace = load_trace(store, "two")
    assert trace is not None
    return trace
