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
