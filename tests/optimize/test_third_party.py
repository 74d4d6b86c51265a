"""A third-party LLM node, registered in this process, is optimized like a built-in one: the
optimizer reads only its declared tunable surface, never its type name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodes.llm_generate import Generate
from studio.flow.spec import load_flow
from studio.node import Tunable
from studio.optimize import prepare
from studio.optimize.optimization import Optimization
from studio.runtime import registry
from studio.runtime.compiler import compile_flow
from studio.store import MemoryStore
from tests.optimize.conftest import DEMO_RULES, MakeTask, options


class AcmeWriter(Generate):
    """A plugin's LLM node: Generate's behaviour under a name and surface of its own (no strategy)."""

    tunable = Tunable(fields=("instructions", "demos", "form"), output="text")


@pytest.fixture
def acme() -> Iterator[str]:
    registry.register("acme.writer", AcmeWriter)
    yield "acme.writer"
    registry._extra.pop("acme.writer")


async def test_a_registered_llm_node_is_optimized_like_a_built_in(make_task: MakeTask, acme: str) -> None:
    task = make_task(DEMO_RULES)
    task.flow.write_text(task.flow.read_text().replace("type: llm.generate", f"type: {acme}"), encoding="utf-8")
    assert compile_flow(load_flow(task.flow)).nodes["answer"].type == acme
    optimization = Optimization(prepare(options(task, 150)), MemoryStore())
    result = await optimization.run()
    report: dict[str, Any] = result.report
    assert (report["before"]["dev"], report["after"]["dev"]) == (0.0, 1.0)
    assert "demos" in report["after"]["move"]
    written = load_flow(report["flow_out"]).spec.nodes["answer"]
    assert written.type == acme and {d["text"] for d in written.config["demos"]} == {"positive", "negative"}
    assert optimization.search is not None and len(optimization.search.candidates) > 2
    kinds = {candidate.kind for candidate in optimization.search.candidates}
    assert "demos" in kinds and "strategy" not in kinds  # only the fields the node declares are edited
