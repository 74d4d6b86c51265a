"""End to end on the embedded model: a small search on the generated sentiment task."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.evaluate.tasks import write
from studio.flow.spec import load_flow
from studio.models.local import is_installed
from studio.optimize import OptimizeOptions, optimize, prepare
from studio.runtime.compiler import compile_flow
from studio.store import MemoryStore

ROOT = Path(__file__).resolve().parents[2]
BUDGET = 30


@pytest.mark.slow
@pytest.mark.skipif(not is_installed(), reason="flowstudio models install smollm2")
async def test_a_small_search_on_smollm2_stays_in_budget_and_writes_a_valid_flow(tmp_path: Path) -> None:
    files = write("sentiment", tmp_path, sizes=(8, 8, 4), seed=0)
    options = OptimizeOptions(
        flow=str(ROOT / "bench" / "flows" / "sentiment.yaml"),
        train=str(files["train"]),
        dev=str(files["dev"]),
        test=str(files["test"]),
        metric="exact",
        budget_calls=BUDGET,
        minibatch=4,
        width=4,
        out=str(tmp_path / "sentiment.optimized.yaml"),
    )
    result = await optimize(prepare(options), MemoryStore())
    data = result.as_json()
    assert 0 < data["calls"] <= BUDGET
    assert data["after"]["dev"] >= data["before"]["dev"]
    assert data["before"]["test"] is not None
    compile_flow(load_flow(data["flow_out"]))
