"""RunOptions carries every option a resume keeps, max_concurrency included, read back in one place."""

from __future__ import annotations

import time
from dataclasses import asdict, fields, replace

from studio.flow.spec import load_flow_text
from studio.runtime.compiler import Plan, compile_flow
from studio.runtime.engine import Engine, RunOptions
from studio.store import MemoryStore

FLOW = """flowstudio: 1
name: opts
inputs: {x: {type: str}}
models:
  default: {model: scripted, script: [{reply: ok, delay_s: 0.1}]}
nodes:
"""


def _plan(branches: int = 4) -> Plan:
    nodes = "\n".join(
        f"  b{i}: {{type: llm.generate, inputs: {{x: $inputs.x}}, config: {{prompt: '{{{{ x }}}} {i}'}}}}"
        for i in range(branches)
    )
    return compile_flow(load_flow_text(FLOW + nodes))


async def test_max_concurrency_is_a_run_option_stored_with_the_run() -> None:
    store = MemoryStore()
    options = RunOptions(max_concurrency=1, max_steps=50, cache=False, models={"default": "scripted"})
    start = time.perf_counter()
    result = await Engine(store).run(_plan(), {"x": "go"}, options=options)
    assert time.perf_counter() - start >= 0.4  # one node at a time, though the engine allows 100
    record = store.get_run(result.run_id)
    assert record is not None
    used = replace(options, durability="sync")  # the run stores the durability mode it used
    assert RunOptions.of_run(record) == used
    assert set(record.options) == {f.name for f in fields(RunOptions)} and record.options == asdict(used)


def test_options_from_older_runs_read_back_with_defaults() -> None:
    assert RunOptions.from_json({"cache": False, "unknown": 1}) == RunOptions(cache=False)
    assert RunOptions().max_concurrency is None
