"""A third-party LLM node, registered in this process, is optimized like a built-in one: the
optimizer reads only its declared tunable surface, never its type name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodes.llm_generate import Generate
from nodes.text_template import Template
from studio.flow.spec import load_flow, load_flow_text
from studio.node import Tunable
from studio.optimize import prepare
from studio.optimize.optimization import Optimization
from studio.optimize.topology import calculate_moves, remove_moves
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


class AcmeDrafter(Generate):
    """A plugin's drafting node: it declares that it writes a free-text answer from a prompt."""

    tunable = Tunable(fields=("instructions",), output="text", drafts=True)


class AcmeTrim(Template):
    """A plugin's reshaping node (only rewrites its input)."""

    reshapes = True


class AcmeOpaque(Template):
    """The same behaviour, but the node type declares nothing: the optimizer must leave it alone."""

    reshapes = False


PLUGIN_FLOW = """\
flowstudio: 1
name: plugin
inputs: {question: {type: str}}
outputs: {answer: $trim.text}
models: {default: {model: scripted, script: [{reply: ok}]}}
nodes:
  draft:
    type: acme.drafter
    inputs: {question: $inputs.question}
    config: {prompt: "Q: {{ question }}"}
  trim:
    type: TRIM
    inputs: {text: $draft.text}
    config: {template: "{{ text | trim }}"}
"""


@pytest.fixture
def plugins() -> Iterator[None]:
    added = {"acme.drafter": AcmeDrafter, "acme.trim": AcmeTrim, "acme.opaque": AcmeOpaque}
    for name, node in added.items():
        registry.register(name, node)
    yield
    for name in added:
        registry._extra.pop(name)


@pytest.mark.parametrize(("trim", "looked_through"), [("acme.trim", True), ("acme.opaque", False)])
def test_topology_moves_read_what_plugin_nodes_declare(plugins: None, trim: str, looked_through: bool) -> None:
    plan = compile_flow(load_flow_text(PLUGIN_FLOW.replace("TRIM", trim)))
    behind = calculate_moves(plan, ["answer"])
    assert [m.node for m in behind] == (["draft"] if looked_through else [])
    removable = {m.node for m in remove_moves(plan)}
    assert ("trim" in removable) is looked_through  # a reshaping node may go; an opaque one never
    assert "draft" not in removable  # the last model node stays
