"""The experiments conformance suite (`ExperimentStore`): every store implementation passes it (memory and SQLite)."""

from __future__ import annotations

from studio.store import MemoryStore, SQLiteStore
from studio.store.base import ExperimentRecord, RunRecord

Store = MemoryStore | SQLiteStore


def _run(run_id: str, flow: str = "f", started_at: str = "2026-01-01T00:00:00") -> RunRecord:
    return RunRecord(run_id=run_id, flow=flow, flow_path=None, flow_hash="h", inputs={"q": "x"}, started_at=started_at)


def _experiment(experiment_id: str, kind: str = "batch", created_at: str = "2026-01-01T00:00:00") -> ExperimentRecord:
    return ExperimentRecord(
        experiment_id=experiment_id, kind=kind, flow="f", config={"data": "d.jsonl"}, created_at=created_at
    )


def test_experiment_round_trip_and_summary(store: Store) -> None:
    store.create_experiment(_experiment("e1"))
    made = store.get_experiment("e1")
    assert made is not None and made.summary is None and made.config == {"data": "d.jsonl"}
    done = store.finish_experiment("e1", {"score": 0.5, "examples": 2})
    assert done.summary == {"score": 0.5, "examples": 2}
    again = store.get_experiment("e1")
    assert again is not None and again.summary == {"score": 0.5, "examples": 2}
    assert store.get_experiment("missing") is None


def test_list_experiments_newest_first_by_kind(store: Store) -> None:
    store.create_experiment(_experiment("old", kind="batch", created_at="2026-01-01T00:00:00"))
    store.create_experiment(_experiment("new", kind="optimize", created_at="2026-01-02T00:00:00"))
    assert [e.experiment_id for e in store.list_experiments()] == ["new", "old"]
    assert [e.experiment_id for e in store.list_experiments(kind="batch")] == ["old"]
    assert [e.experiment_id for e in store.list_experiments(limit=1)] == ["new"]


def test_runs_of_experiment_oldest_first(store: Store) -> None:
    for run_id, started, experiment in [("b", "02", "e1"), ("a", "01", "e1"), ("c", "03", None)]:
        run = _run(run_id, started_at=f"2026-01-{started}T00:00:00")
        run.experiment_id = experiment
        run.options = {"example": run_id}
        store.create_run(run)
    runs = store.runs_of_experiment("e1")
    assert [r.run_id for r in runs] == ["a", "b"]
    assert runs[0].options == {"example": "a"}
    assert store.runs_of_experiment("none") == []
