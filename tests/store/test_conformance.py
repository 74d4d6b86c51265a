"""One suite every store implementation must pass (memory and SQLite)."""

from __future__ import annotations

from studio.store import MemoryStore, SQLiteStore
from studio.store.base import CallRecord, RunRecord, StepRecord

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
    assert [r.run_id for r in store.list_runs()] == ["new", "old"]
    assert [r.run_id for r in store.list_runs(flow="a")] == ["old"]
    assert [r.run_id for r in store.list_runs(status="failed")] == ["old"]
    assert [r.run_id for r in store.list_runs(limit=1)] == ["new"]


def test_records_are_copies(store: Store) -> None:
    store.create_run(_run("r1"))
    run = store.get_run("r1")
    assert run is not None
    run.inputs["q"] = "changed"
    again = store.get_run("r1")
    assert again is not None and again.inputs == {"q": "x"}
