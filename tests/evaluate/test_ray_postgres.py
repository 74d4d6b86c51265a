"""`batch --executor ray` on a PostgreSQL store: the Ray workers write their runs into the store
themselves (nothing goes through the driver) and share the LLM cache there."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from studio.evaluate.batch import BatchOptions, batch
from studio.store.postgres import PostgresStore
from tests.conftest import FIXTURES, ROOT

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'flowstudio[ray]')")
pytestmark = pytest.mark.slow  # starts a local Ray runtime

QA = str(FIXTURES / "qa.yaml")
DATA = str(ROOT / "tests" / "data" / "qa.jsonl")


@pytest.fixture(scope="module")
def ray_runtime() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def _calls(store: PostgresStore, experiment_id: str) -> tuple[int, int]:
    """(answered calls made at the model, calls served from the cache) by the experiment's runs."""
    calls = [c for run in store.runs_of_experiment(experiment_id) for c in store.calls(run.run_id) if not c.error]
    return sum(not c.cache_hit for c in calls), sum(c.cache_hit for c in calls)


async def test_ray_workers_write_their_runs_and_share_the_cache_in_postgresql(
    ray_runtime: None, postgres_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    store = PostgresStore(postgres_url)
    through_driver: list[Any] = []
    monkeypatch.setattr(store, "import_run", lambda *args: through_driver.append(args))
    monkeypatch.setattr(store, "cache_put", lambda *args: through_driver.append(args))
    try:
        options = BatchOptions(flow=QA, data=DATA, cache=True, executor="ray", concurrency=4)
        first = await batch(options, store)
        assert through_driver == []  # neither runs nor cache entries funnelled through the driver
        runs = store.runs_of_experiment(first.experiment_id)
        assert len(runs) == 4 and {r.run_id for r in runs} == {r.outcome.run_id for r in first.results}
        assert os.getpid() not in {r.pid for r in runs}  # written by the Ray workers' engines
        succeeded = next(r for r in runs if r.status == "succeeded")
        assert [s.node for s in store.steps(succeeded.run_id)] == ["ask", "answer", "clean"]
        assert store.flow_text(succeeded.run_id) == Path(QA).read_text()
        assert first.summary["score"] == 0.5
        made, _ = _calls(store, first.experiment_id)
        assert made > 0
        again = await batch(options, store)
        assert _calls(store, again.experiment_id) == (0, made)  # the workers' cache entries, read by workers
        assert [r.outcome.outputs for r in again.results] == [r.outcome.outputs for r in first.results]
        local = await batch(BatchOptions(flow=QA, data=DATA, cache=True), store)
        assert _calls(store, local.experiment_id) == (0, made)  # and by the driver's own engine
    finally:
        store.close()
