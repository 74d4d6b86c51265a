"""`batch --executor ray`: examples as Ray tasks on a local 2-CPU runtime, runs gathered into the driver's store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from studio.evaluate.batch import BatchOptions, batch
from studio.store import SQLiteStore
from tests.conftest import FIXTURES, ROOT

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'flowstudio[ray]')")

QA = str(FIXTURES / "qa.yaml")
DATA = str(ROOT / "tests" / "data" / "qa.jsonl")


@pytest.fixture(scope="module")
def ray_runtime() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def _per_example(result: Any) -> list[tuple[str, Any, float | None]]:
    return [(r.outcome.status, r.outcome.outputs, r.score) for r in result.results]


async def test_ray_batch_scores_equal_a_local_run_and_lands_in_the_store(ray_runtime: None, tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "ray.db")
    try:
        local = await batch(BatchOptions(flow=QA, data=DATA, cache=False), store)
        remote = await batch(BatchOptions(flow=QA, data=DATA, cache=False, executor="ray", concurrency=4), store)
        assert ray.is_initialized()  # a runtime it did not start is left running
        assert _per_example(remote) == _per_example(local)
        for key in ("score", "score_ci", "examples", "failed", "errors", "tokens", "cost_usd"):
            assert remote.summary[key] == local.summary[key], key
        assert remote.summary["score"] == 0.5

        runs = store.runs_of_experiment(remote.experiment_id)
        assert len(runs) == 4 and {r.run_id for r in runs} == {r.outcome.run_id for r in remote.results}
        succeeded = next(r for r in runs if r.status == "succeeded")
        assert [s.node for s in store.steps(succeeded.run_id)] == ["ask", "answer", "clean"]
        (call,) = store.calls(succeeded.run_id)
        assert call.node == "answer" and call.response
        assert store.flow_text(succeeded.run_id) == Path(QA).read_text()
        stored = store.get_experiment(remote.experiment_id)
        assert stored is not None and stored.config["executor"] == "ray" and stored.summary is not None
        assert stored.summary["score"] == remote.summary["score"] and len(stored.summary["scores"]) == 4
    finally:
        store.close()


def _model_calls(store: SQLiteStore, experiment_id: str) -> tuple[int, int]:
    """(answered calls made at the model, calls served from the cache) by the experiment's runs;
    a failed call (the fixture's `crash` example) is never cached, so it is left out."""
    calls = [c for run in store.runs_of_experiment(experiment_id) for c in store.calls(run.run_id) if not c.error]
    return sum(not c.cache_hit for c in calls), sum(c.cache_hit for c in calls)


async def test_a_repeated_ray_batch_is_served_from_the_drivers_cache(ray_runtime: None, tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "ray.db")
    try:
        options = BatchOptions(flow=QA, data=DATA, cache=True, executor="ray", concurrency=4)
        first = await batch(options, store)
        made, _ = _model_calls(store, first.experiment_id)
        assert made > 0
        assert store.conn.execute("SELECT count(*) FROM cache").fetchone()[0] >= made  # written through the driver
        again = await batch(options, store)
        assert _model_calls(store, again.experiment_id) == (0, made)  # every call served from the cache
        assert _per_example(again) == _per_example(first)
        local = await batch(BatchOptions(flow=QA, data=DATA, cache=True), store)
        assert _model_calls(store, local.experiment_id) == (0, made)  # and the local executor shares it
    finally:
        store.close()
