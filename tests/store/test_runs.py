"""The runs-and-steps conformance suite (`RunStore`): every store implementation passes it (memory and SQLite)."""

from __future__ import annotations

import pytest

from studio.store import MemoryStore, SQLiteStore
from studio.store.base import CallRecord, ExperimentRecord, RunFilter, RunRecord, StepRecord
from studio.store.recorder import Recorder

Store = MemoryStore | SQLiteStore


def _run(run_id: str, flow: str = "f", started_at: str = "2026-01-01T00:00:00") -> RunRecord:
    return RunRecord(run_id=run_id, flow=flow, flow_path=None, flow_hash="h", inputs={"q": "x"}, started_at=started_at)


def test_run_round_trip(store: Store) -> None:
    store.create_run(_run("r1"), "flowstudio: 1\n")
    run = store.get_run("r1")
    assert run is not None and run.status == "running" and run.inputs == {"q": "x"}
    assert store.flow_text("r1") == "flowstudio: 1\n"
    assert store.get_run("missing") is None


def test_steps_and_calls_add_up_on_the_run(store: Store) -> None:
    store.create_run(_run("r1"))
    call = CallRecord(node="a", model="scripted", request={"prompt": "hi"}, response="yo", input_tokens=1, output_tokens=1, cost_usd=0.25)  # fmt: skip
    store.finish_step(
        "r1", StepRecord(node="a", status="succeeded", outputs={"text": "yo"}, tokens=2, cost_usd=0.25), [call]
    )
    store.finish_step("r1", StepRecord(node="b", status="skipped"), [])
    done = store.finish_run("r1", status="succeeded", outputs={"x": "yo"}, error=None)
    assert (done.steps, done.tokens, done.cost_usd, done.outputs) == (2, 2, 0.25, {"x": "yo"})
    assert done.ended_at is not None
    assert [s.node for s in store.steps("r1")] == ["a", "b"]
    (stored,) = store.calls("r1")
    assert stored.request == {"prompt": "hi"} and stored.response == "yo" and stored.cache_hit is False


def test_list_runs_newest_first_with_filters(store: Store) -> None:
    store.create_run(_run("old", flow="a", started_at="2026-01-01T00:00:00"))
    store.create_run(_run("new", flow="b", started_at="2026-01-02T00:00:00"))
    store.finish_run("old", status="failed", outputs=None, error="boom")
    assert [r.run_id for r in store.query_runs()] == ["new", "old"]
    assert [r.run_id for r in store.query_runs(RunFilter(flow="a"))] == ["old"]
    assert [r.run_id for r in store.query_runs(RunFilter(status="failed"))] == ["old"]
    assert [r.run_id for r in store.query_runs(limit=1)] == ["new"]


def test_records_are_copies(store: Store) -> None:
    store.create_run(_run("r1"))
    run = store.get_run("r1")
    assert run is not None
    run.inputs["q"] = "changed"
    again = store.get_run("r1")
    assert again is not None and again.inputs == {"q": "x"}


def test_import_run_keeps_everything_as_made(store: Store) -> None:
    run = _run("r1")
    run.status, run.outputs, run.tokens, run.cost_usd, run.steps = "succeeded", {"x": 1}, 3, 0.5, 1
    run.ended_at, run.experiment_id = "2026-01-01T00:00:01", "e1"
    step = StepRecord(node="a", status="succeeded", outputs={"x": 1}, tokens=3, cost_usd=0.5)
    call = CallRecord(
        node="a", model="scripted", request={"prompt": "p"}, response="r", input_tokens=2, output_tokens=1
    )
    store.import_run(run, "flowstudio: 1\n", [(step, [call])])
    stored = store.get_run("r1")
    assert stored is not None
    assert (stored.status, stored.outputs, stored.tokens, stored.steps, stored.ended_at) == (
        "succeeded",
        {"x": 1},
        3,
        1,
        "2026-01-01T00:00:01",
    )
    assert [s.node for s in store.steps("r1")] == ["a"]
    assert [c.response for c in store.calls("r1")] == ["r"]
    assert store.flow_text("r1") == "flowstudio: 1\n"
    assert [r.run_id for r in store.runs_of_experiment("e1")] == ["r1"]


def _runs_for_paging(store: Store) -> None:
    days = ["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04", "2026-01-05"]
    for number, day in enumerate(days):
        flow = "a" if number % 2 == 0 else "b"
        store.create_run(_run(f"r{number}", flow=flow, started_at=f"{day}T12:00:00+00:00"))
    store.finish_run("r3", status="failed", outputs=None, error="boom")


def test_query_runs_pages_newest_first(store: Store) -> None:
    from studio.store.base import RunFilter

    _runs_for_paging(store)
    assert [r.run_id for r in store.query_runs(limit=2)] == ["r4", "r3"]
    assert [r.run_id for r in store.query_runs(limit=2, offset=2)] == ["r2", "r1"]
    assert [r.run_id for r in store.query_runs(limit=2, offset=4)] == ["r0"]
    assert store.query_runs(limit=2, offset=10) == []
    assert [r.run_id for r in store.query_runs(RunFilter(flow="a"))] == ["r4", "r2", "r0"]
    assert store.count_runs() == 5 and store.count_runs(RunFilter(flow="b")) == 2


def test_query_runs_filters_by_status_date_and_experiment(store: Store) -> None:
    from studio.store.base import RunFilter

    _runs_for_paging(store)
    store.create_run(RunRecord(run_id="x1", flow="a", flow_path=None, flow_hash="h", inputs={}, started_at="2026-01-03T13:00:00+00:00", experiment_id="e1"))  # fmt: skip
    assert [r.run_id for r in store.query_runs(RunFilter(status="failed"))] == ["r3"]
    window = RunFilter(since="2026-01-02", until="2026-01-04")
    assert [r.run_id for r in store.query_runs(window)] == ["x1", "r2", "r1"]
    assert store.count_runs(window) == 3
    assert [r.run_id for r in store.query_runs(RunFilter(experiment_id="e1"))] == ["x1"]
    assert store.count_runs(RunFilter(flow="a", status="failed")) == 0


def test_flow_names_are_distinct_and_sorted(store: Store) -> None:
    assert store.flow_names() == []
    _runs_for_paging(store)
    assert store.flow_names() == ["a", "b"]


async def test_the_engines_writes_equal_the_plain_ones(store: Store) -> None:
    recorder = Recorder(store)
    recorder.create_run(_run("r1"), "flowstudio: 1\n")
    await recorder.finish_step("r1", StepRecord(node="a", status="succeeded", tokens=3, cost_usd=0.5), [])
    recorder.cache_put("k", "scripted", {"text": "yo"})
    done = await recorder.finish_run("r1", status="succeeded", outputs={"x": 1}, error=None)
    assert (done.steps, done.tokens, done.cost_usd, done.outputs, done.status) == (1, 3, 0.5, {"x": 1}, "succeeded")
    assert store.flow_text("r1") == "flowstudio: 1\n"
    assert [s.node for s in store.steps("r1")] == ["a"]
    assert store.cache_get("k") == {"text": "yo"}  # a posted put is durable by the next committed write


def test_ids_resolve_from_unique_prefixes(store: Store) -> None:
    from studio.errors import InputError
    from studio.store.base import resolve_id

    for run_id in ("abc123", "abd456", "ab"):
        store.create_run(_run(run_id))
    store.create_experiment(ExperimentRecord(experiment_id="e1f2", kind="batch", flow="f"))
    assert store.ids_with_prefix("run", "ab", limit=5) == ["ab", "abc123", "abd456"]
    assert resolve_id(store, "run", "abc") == "abc123"
    assert resolve_id(store, "run", "ab") == "ab"  # a whole id wins over the longer ones it begins
    assert resolve_id(store, "experiment", "e1") == "e1f2"
    with pytest.raises(InputError, match="more than one run"):
        resolve_id(store, "run", "a")
    with pytest.raises(InputError, match="no run 'zz'"):
        resolve_id(store, "run", "zz")
    with pytest.raises(InputError, match="no experiment"):
        resolve_id(store, "experiment", "abc")
