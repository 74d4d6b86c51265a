"""Sub-flow nodes: flow.call, control.map, control.loop — outputs, step names, limits, resume."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from studio.errors import CompileError
from studio.flow.spec import load_flow, load_flow_text
from studio.runtime import runner
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine
from studio.store import MemoryStore
from tests.conftest import FIXTURES


async def test_call_map_and_loop_outputs_and_step_names() -> None:
    store = MemoryStore()
    plan = compile_flow(load_flow(FIXTURES / "structural.yaml"))
    result = await Engine(store).run(plan, {"words": ["x", "y", "z"]})
    assert result.status == "succeeded", result.error
    assert result.outputs == {
        "mapped": [{"loud": "X?"}, {"loud": "Y?"}, {"loud": "Z?"}],
        "called": "HELLO!",
        "counted": "3",
        "iterations": 3,
    }
    names = Counter(s.node for s in store.steps(result.run_id))
    assert {"each[0].up", "each[2].up", "once.up", "count[1].add", "count[3].add"} <= set(names)
    assert all(n == 1 for n in names.values())


def _loop(on_limit: str) -> str:
    return f"""flowstudio: 1
name: forever
outputs: {{n: $spin.n, iterations: $spin.iterations}}
nodes:
  spin:
    type: control.loop
    inputs: {{n: a}}
    config:
      until: outputs.n == 'never'
      max_iterations: 3
      on_limit: {on_limit}
      flow:
        flowstudio: 1
        name: step
        inputs: {{n: {{type: str}}}}
        outputs: {{n: $t.text}}
        nodes:
          t: {{type: text.template, inputs: {{n: $inputs.n}}, config: {{template: "{{{{ n }}}}a"}}}}
"""


@pytest.mark.parametrize(
    ("on_limit", "status", "outputs"), [("fail", "failed", None), ("stop", "succeeded", {"n": "aaaa", "iterations": 3})]
)
async def test_loop_is_always_bounded(on_limit: str, status: str, outputs: object) -> None:
    result = await Engine(MemoryStore()).run(compile_flow(load_flow_text(_loop(on_limit))), {})
    assert (result.status, result.outputs) == (status, outputs)
    if status == "failed":
        assert result.error is not None and "max_iterations=3" in result.error


def test_sub_flow_ports_are_checked_at_compile_time(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "shout.yaml").write_text((FIXTURES / "sub" / "shout.yaml").read_text())
    flow = tmp_path / "f.yaml"
    flow.write_text(
        "flowstudio: 1\nname: f\nnodes:\n  once:\n    type: flow.call\n    inputs: {item: x, wrong: x}\n    config: {flow: sub/shout.yaml}\n"
    )
    with pytest.raises(CompileError, match="has no input 'wrong'"):
        compile_flow(load_flow(flow))
    flow.write_text(
        "flowstudio: 1\nname: f\nnodes:\n  once:\n    type: flow.call\n    config: {flow: sub/missing.yaml}\n"
    )
    with pytest.raises(CompileError, match="sub-flow"):
        compile_flow(load_flow(flow))


async def test_resume_skips_finished_map_items(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("script:\n  - {match: item c, error: {kind: auth}}\n  - {reply: ok}\n")
    (tmp_path / "item.yaml").write_text(
        "flowstudio: 1\nname: item\ninputs: {item: {type: str}}\noutputs: {r: $g.text}\n"
        f"models:\n  default: {{model: scripted/{script}}}\n"
        "nodes:\n  g: {type: llm.generate, inputs: {i: $inputs.item}, config: {prompt: 'item {{ i }}'}}\n"
    )
    flow = tmp_path / "main.yaml"
    flow.write_text(
        "flowstudio: 1\nname: main\ninputs: {xs: {type: 'list[str]'}}\noutputs: {rs: $m.results}\n"
        "nodes:\n  m: {type: control.map, inputs: {items: $inputs.xs}, config: {flow: item.yaml, concurrency: 1}}\n"
    )
    store = MemoryStore()
    engine = Engine(store)
    failed = await engine.run(compile_flow(load_flow(flow)), {"xs": ["a", "b", "c"]})
    assert failed.status == "failed"
    script.write_text("script:\n  - {reply: ok}\n")
    resumed = await runner.resume_on(engine, failed.run_id)
    assert resumed.status == "succeeded" and resumed.outputs == {"rs": [{"r": "ok"}] * 3}
    calls = Counter(c.node for c in store.calls(failed.run_id))
    assert calls == {"m[0].g": 1, "m[1].g": 1, "m[2].g": 2}


async def test_a_big_map_keeps_order_and_a_bounded_number_of_tasks() -> None:
    """5,000 items at concurrency 16: results in input order, never more tasks than workers."""
    text = """flowstudio: 1
name: big-map
inputs: {xs: {type: "list[int]"}}
outputs: {rs: $m.results}
nodes:
  m:
    type: control.map
    inputs: {items: $inputs.xs}
    config:
      concurrency: 16
      flow:
        flowstudio: 1
        name: one
        inputs: {item: {type: int}}
        outputs: {v: $t.text}
        nodes:
          t: {type: text.template, inputs: {i: $inputs.item}, config: {template: "{{ i }}"}}
"""
    most = 0

    def watch(**_: object) -> None:
        nonlocal most
        most = max(most, len(asyncio.all_tasks()))

    result = await Engine(MemoryStore(), hooks=[watch]).run(
        compile_flow(load_flow_text(text)), {"xs": list(range(5000))}
    )
    assert result.status == "succeeded"
    assert result.outputs == {"rs": [{"v": str(i)} for i in range(5000)]}
    assert most <= 2 * 16 + 8  # a worker and its sub-run's node per slot, plus the run's own few
