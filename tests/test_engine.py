"""Engine scenarios: inputs, expected outputs, and which nodes ran how (and how often)."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from studio.errors import InputError
from studio.flow.spec import load_flow_text
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine
from studio.store import MemoryStore

HEADER = "flowstudio: 1\nname: scenario\n"


@dataclass
class Scenario:
    name: str
    flow: str
    inputs: dict[str, Any]
    outputs: dict[str, Any] | None
    statuses: dict[str, str]
    calls: dict[str, int] = field(default_factory=dict)
    status: str = "succeeded"
    error: str | None = None
    attempts: dict[str, int] = field(default_factory=dict)


ROUTER = """
inputs: {q: {type: str}}
outputs: {kind: $route.label, answer: $merge.value, math: $math.text}
models:
  default:
    model: scripted
    script:
      - {match: "Label:$", reply: " math"}
      - {match: "(?s)Q: .*A:$", reply: "4"}
      - {reply: "hello"}
nodes:
  route:
    type: llm.classify
    inputs: {text: $inputs.q}
    config: {labels: [math, chat]}
  math:
    type: llm.generate
    when: route.label == 'math'
    inputs: {q: $inputs.q}
    config: {prompt: "Q: {{ q }}\\nA:", form: completion}
  chat:
    type: llm.generate
    when: route.label == 'chat'
    inputs: {q: $inputs.q}
    config: {prompt: "{{ q }}"}
  polish:
    type: text.template
    inputs: {reply: $chat.text}
    config: {template: "{{ reply }}!"}
  merge:
    type: control.merge
    inputs: {options: [$polish.text, $math.text]}
"""

SCENARIOS = [
    Scenario(
        "template chain",
        """
inputs: {who: {type: str}, n: {type: int, default: 2}}
outputs: {greeting: $b.text, count: $inputs.n, literal: $$not_a_ref}
nodes:
  a: {type: text.template, inputs: {who: $inputs.who}, config: {template: "hi {{ who }}"}}
  b: {type: text.template, inputs: {x: $a.text, n: $inputs.n}, config: {template: "{{ x }} x{{ n }}"}}
""",
        {"who": "ann"},
        {"greeting": "hi ann x2", "count": 2, "literal": "$not_a_ref"},
        {"a": "succeeded", "b": "succeeded"},
    ),
    Scenario(
        "guard routes to one branch, merge takes it",
        ROUTER,
        {"q": "2+2?"},
        {"kind": "math", "answer": "4", "math": "4"},
        {"route": "succeeded", "math": "succeeded", "chat": "skipped", "polish": "skipped", "merge": "succeeded"},
        calls={"route": 1, "math": 1},
    ),
    Scenario(
        "failing node fails the run, its dependants never run",
        """
outputs: {x: $b.text}
models:
  default: {model: scripted, script: [{error: {kind: auth}}]}
nodes:
  a: {type: llm.generate, config: {prompt: hi}, retry: {attempts: 3, backoff_s: 0}}
  b: {type: text.template, inputs: {x: $a.text}, config: {template: "{{ x }}"}}
""",
        {},
        None,
        {"a": "failed"},
        calls={"a": 1},
        status="failed",
        error="node 'a' failed",
    ),
    Scenario(
        "a node that becomes ready after another failed never starts",
        """
models:
  default:
    model: scripted
    script: [{match: slow, reply: done, delay_s: 0.1}, {error: {kind: auth}}]
nodes:
  fails: {type: llm.generate, config: {prompt: hi}}
  slow: {type: llm.generate, config: {prompt: slow}}
  after_slow: {type: text.template, inputs: {x: $slow.text}, config: {template: "{{ x }}"}}
""",
        {},
        None,
        {"fails": "failed", "slow": "succeeded"},
        calls={"fails": 1, "slow": 1},
        status="failed",
        error="node 'fails' failed",
    ),
    Scenario(
        "transient model errors are retried inside the call",
        """
outputs: {x: $a.text}
models:
  default:
    model: scripted
    retry_backoff_s: 0
    script: [{error: {kind: rate_limit, times: 2}}, {reply: done}]
nodes:
  a: {type: llm.generate, config: {prompt: hi}}
""",
        {},
        {"x": "done"},
        {"a": "succeeded"},
        calls={"a": 3},
        attempts={"a": 1},
    ),
    Scenario(
        "node retries re-run a node that failed after model retries",
        """
outputs: {x: $a.text}
models:
  default:
    model: scripted
    retries: 0
    script: [{error: {kind: server, times: 1}}, {reply: done}]
nodes:
  a: {type: llm.generate, config: {prompt: hi}, retry: {attempts: 2, backoff_s: 0}}
""",
        {},
        {"x": "done"},
        {"a": "succeeded"},
        calls={"a": 2},
        attempts={"a": 2},
    ),
    Scenario(
        "timeout fails the node",
        """
models:
  default: {model: scripted, script: [{reply: late, delay_s: 2}]}
nodes:
  a: {type: llm.generate, config: {prompt: hi}, timeout_s: 0.05}
""",
        {},
        None,
        {"a": "failed"},
        status="failed",
        error="timed out",
    ),
    Scenario(
        "sandbox escape fails the node and the run",
        """
nodes:
  a: {type: text.template, config: {template: "{{ ''.__class__.__mro__ }}"}}
""",
        {},
        None,
        {"a": "failed"},
        status="failed",
        error="sandbox",
    ),
    Scenario(
        "after orders without data; an optional input from a skipped node renders its default",
        """
inputs: {go: {type: bool}}
outputs: {x: $c.text}
nodes:
  a: {type: text.template, when: inputs.go, config: {template: A}}
  b: {type: text.template, after: [a], config: {template: B}}
  c: {type: text.template, inputs: {a: $a.text, b: $b.text}, config: {template: "{{ a | default('none') }}-{{ b }}"}}
""",
        {"go": False},
        {"x": "none-B"},
        {"a": "skipped", "b": "succeeded", "c": "succeeded"},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
async def test_scenario(scenario: Scenario) -> None:
    store = MemoryStore()
    plan = compile_flow(load_flow_text(HEADER + scenario.flow))
    result = await Engine(store).run(plan, scenario.inputs)
    assert result.status == scenario.status, result.error
    assert result.outputs == scenario.outputs
    steps = store.steps(result.run_id)
    assert {s.node: s.status for s in steps} == scenario.statuses
    assert dict(Counter(c.node for c in store.calls(result.run_id))) == scenario.calls
    for node, attempt in scenario.attempts.items():
        assert next(s.attempt for s in steps if s.node == node) == attempt
    if scenario.error:
        assert result.error is not None and scenario.error in result.error
    run = store.get_run(result.run_id)
    assert run is not None and run.status == scenario.status and run.steps == len(steps)


async def test_fan_out_runs_concurrently_within_the_limit() -> None:
    branches = "\n".join(
        f"  b{i}: {{type: llm.generate, inputs: {{x: $inputs.x}}, config: {{prompt: '{{{{ x }}}} {i}'}}}}"
        for i in range(20)
    )
    text = (
        HEADER
        + "inputs: {x: {type: str}}\nmodels:\n  default: {model: scripted, script: [{reply: ok, delay_s: 0.2}]}\n"
    )
    plan = compile_flow(load_flow_text(text + "nodes:\n" + branches))
    start = time.perf_counter()
    await Engine(MemoryStore()).run(plan, {"x": "go"})
    assert time.perf_counter() - start < 0.6
    start = time.perf_counter()
    result = await Engine(MemoryStore(), max_concurrency=5).run(plan, {"x": "go"})
    assert 0.8 <= time.perf_counter() - start < 1.4
    assert result.status == "succeeded"


async def test_tokens_and_cost_are_summed_per_step_and_run() -> None:
    flow = (
        HEADER
        + """
models:
  default:
    model: scripted
    script: [{reply: two words}]
    input_cost_per_token: 0.5
    output_cost_per_token: 1.0
nodes:
  a: {type: llm.generate, config: {prompt: "one two three"}}
"""
    )
    store = MemoryStore()
    result = await Engine(store).run(compile_flow(load_flow_text(flow)), {})
    assert result.tokens == 5
    assert result.cost_usd == pytest.approx(3 * 0.5 + 2 * 1.0)
    (call,) = store.calls(result.run_id)
    assert call.request["messages"] == [{"role": "user", "content": "one two three"}]
    assert call.response == "two words"


@pytest.mark.parametrize(
    ("given", "words"),
    [({}, "input 'n' is required"), ({"n": "three"}, "must be int"), ({"n": 1, "m": 2}, "unknown input 'm'")],
)
async def test_inputs_are_checked_before_anything_runs(given: dict[str, Any], words: str) -> None:
    store = MemoryStore()
    plan = compile_flow(
        load_flow_text(HEADER + "inputs: {n: {type: int}}\nnodes:\n  a: {type: text.template, config: {template: x}}\n")
    )
    with pytest.raises(InputError, match=words):
        await Engine(store).run(plan, given)
    assert store.query_runs() == []
