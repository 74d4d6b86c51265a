"""Graph constructs: control.switch, control.join, control.merge fallbacks, the readiness rule,
optional template variables, loop `collect`, and the `messages` type.

Each scenario is a table row: inputs, expected outputs, the status of every step (sub-flow
steps too, so a loop's rows say how many times each node ran) and model calls per node.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from studio.errors import CompileError
from studio.flow.spec import load_flow, load_flow_text
from studio.runtime import runner
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine
from studio.store import MemoryStore
from tests.conftest import CLI, FIXTURES

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


SWITCH = """
inputs: {kind: {type: any}, text: {type: str, default: hello}}
outputs: {branch: $route.branch, reply: $reply.value, billing: $route.billing}
nodes:
  route:
    type: control.switch
    inputs: {value: $inputs.kind, payload: $inputs.text}
    config: {cases: {billing: billing, refund: billing, bug: bug, "true": flag, "3": three}, default: other}
  on_billing: {type: text.template, inputs: {t: $route.billing}, config: {template: "B:{{ t }}"}}
  on_bug: {type: text.template, inputs: {t: $route.bug}, config: {template: "G:{{ t }}"}}
  on_other: {type: text.template, inputs: {t: $route.other}, config: {template: "O:{{ t }}"}}
  on_flag: {type: text.template, inputs: {t: $route.flag}, config: {template: "F:{{ t }}"}}
  on_three: {type: text.template, inputs: {t: $route.three}, config: {template: "3:{{ t }}"}}
  then_billing: {type: text.template, inputs: {t: $on_billing.text}, config: {template: "{{ t }}!"}}
  reply:
    type: control.merge
    inputs: {options: [$then_billing.text, $on_bug.text, $on_other.text, $on_flag.text, $on_three.text]}
"""
SWITCH_NODES = ["route", "on_billing", "on_bug", "on_other", "on_flag", "on_three", "then_billing", "reply"]


def _switch_statuses(*ran: str) -> dict[str, str]:
    return {n: "succeeded" if n in ran else "skipped" for n in SWITCH_NODES}


NO_DEFAULT = """
inputs: {kind: {type: str}}
outputs: {x: $on_a.text}
nodes:
  route: {type: control.switch, inputs: {value: $inputs.kind}, config: {cases: {a: a, b: b}}}
  on_a: {type: text.template, inputs: {t: $route.a}, config: {template: "A:{{ t }}"}}
"""

BOTH_BRANCHES = """
inputs: {kind: {type: str}}
outputs: {both: $both.text, maybe: $maybe.text, history: $turn.messages}
nodes:
  route: {type: control.switch, inputs: {value: $inputs.kind}, config: {cases: {a: a, b: b}}}
  both: {type: text.template, inputs: {a: $route.a, b: $route.b}, config: {template: "{{ a }}{{ b }}"}}
  maybe:
    type: text.template
    inputs: {a: $route.a, b: $route.b}
    config: {template: "{{ a | default('-') }}{{ b | default('-') }}"}
  turn: {type: chat.append, inputs: {messages: $route.a, content: hi}}
"""

SKIPPED_SWITCH = """
inputs: {go: {type: bool}}
outputs: {branch: $route.branch, x: $on_a.text}
nodes:
  label: {type: text.template, when: inputs.go, config: {template: a}}
  route: {type: control.switch, inputs: {value: $label.text}, config: {cases: {a: a}, default: other}}
  on_a: {type: text.template, inputs: {t: $route.a}, config: {template: "A:{{ t }}"}}
  on_other: {type: text.template, inputs: {t: $route.other}, config: {template: "O:{{ t }}"}}
"""

JOIN = """
inputs: {a: {type: bool}, b: {type: bool}, c: {type: bool}}
outputs: {values: $all.values, count: $count.text, first: $first.value}
nodes:
  one: {type: text.template, when: inputs.a, config: {template: "1"}}
  two: {type: text.template, when: inputs.b, config: {template: "2"}}
  three: {type: text.template, when: inputs.c, config: {template: "3"}}
  all: {type: control.join, inputs: {options: [$one.text, $two.text, $three.text]}}
  count: {type: text.template, inputs: {xs: $all.values}, config: {template: "{{ xs | length }}"}}
  first: {type: control.merge, inputs: {options: [$one.text, $two.text, $three.text]}}
"""

JOIN_NODES = ["one", "two", "three", "all", "count", "first"]


def _join_statuses(*ran: str) -> dict[str, str]:
    return {n: "succeeded" if n in ran else "skipped" for n in JOIN_NODES}


JOIN_LITERALS = """
inputs: {extra: {type: str}}
outputs: {values: $all.values}
nodes:
  gone: {type: text.template, when: "false", config: {template: x}}
  none: {type: data.extract, inputs: {data: {}}, config: {path: missing}}
  all: {type: control.join, inputs: {options: [$gone.text, $none.value, $inputs.extra, literal]}}
"""

ARRIVAL = """
outputs: {wired: $wired.values, arrived: $arrived.values}
models:
  default:
    model: scripted
    script: [{match: slow, reply: slow, delay_s: 0.2}, {reply: fast}]
nodes:
  slow: {type: llm.generate, config: {prompt: slow}}
  fast: {type: llm.generate, config: {prompt: quick}}
  wired: {type: control.join, inputs: {options: [$slow.text, $fast.text, first]}}
  arrived:
    type: control.join
    inputs: {options: [$slow.text, $fast.text, first]}
    config: {order: arrival}
"""

MERGE_FALLBACK = """
inputs: {go: {type: bool}, fallback: {type: str, default: from input}}
outputs: {by_input: $by_input.value, by_literal: $by_literal.value, only_wires: $only_wires.value}
nodes:
  branch: {type: text.template, when: inputs.go, config: {template: from branch}}
  by_input: {type: control.merge, inputs: {options: [$branch.text, $inputs.fallback]}}
  by_literal: {type: control.merge, inputs: {options: [$branch.text, a literal]}}
  only_wires: {type: control.merge, inputs: {options: [$branch.text]}}
"""

READINESS = """
inputs: {go: {type: bool}}
outputs: {required: $required.text, downstream: $downstream.text, optional: $optional.messages, after: $after.text}
nodes:
  branch: {type: text.template, when: inputs.go, config: {template: from branch}}
  other: {type: text.template, config: {template: runs}}
  required: {type: text.template, inputs: {a: $branch.text, b: $other.text}, config: {template: "{{ a }} {{ b }}"}}
  downstream: {type: text.template, inputs: {x: $required.text}, config: {template: "{{ x }}"}}
  optional:
    type: chat.append
    inputs: {messages: $chat.messages, content: $other.text}
  chat: {type: chat.append, when: inputs.go, inputs: {content: $branch.text}}
  after: {type: text.template, after: [branch], config: {template: ordered}}
"""

OPTIONAL_VARIABLES = """
inputs: {tone: {type: str}, name: {type: "str | null", default: null}}
outputs: {wired: $wired.text, unwired: $unwired.text, declared: $declared.text, null_wired: $null_wired.text}
nodes:
  wired:
    type: text.template
    inputs: {tone: $inputs.tone}
    config: {template: "[{{ tone | default('neutral') }}]"}
  unwired:
    type: text.template
    config: {template: "[{{ tone | default('neutral') }}]"}
  declared:
    type: text.template
    config: {template: "[{{ note }}]{% if note %}noted{% else %}none{% endif %}", optional: [note]}
  null_wired:
    type: text.template
    inputs: {name: $inputs.name}
    config: {template: "hi {{ name | d('you') }}"}
"""

LOOP_COLLECT = """
outputs: {n: $count.n, seen: $count.n_seen, iterations: $count.iterations}
nodes:
  count:
    type: control.loop
    inputs: {n: ""}
    config:
      until: outputs.n == 'aaa'
      max_iterations: 5
      collect: [n_seen]
      flow:
        flowstudio: 1
        name: step
        inputs: {n: {type: str}}
        outputs: {n: $t.text, n_seen: $t.text}
        nodes:
          t: {type: text.template, inputs: {n: $inputs.n}, config: {template: "{{ n }}a"}}
"""

NESTED_COLLECT = """
outputs: {rows: $outer.row, iterations: $outer.iterations}
nodes:
  outer:
    type: control.loop
    inputs: {i: ""}
    config:
      until: outputs.i == 'xx'
      max_iterations: 4
      collect: [row]
      flow:
        flowstudio: 1
        name: outer-step
        inputs: {i: {type: str}}
        outputs: {i: $mark.text, row: $inner.cell}
        nodes:
          mark: {type: text.template, inputs: {i: $inputs.i}, config: {template: "{{ i }}x"}}
          inner:
            type: control.loop
            inputs: {j: "", i: $mark.text}
            config:
              until: outputs.j == 'yy'
              max_iterations: 4
              collect: [cell]
              flow:
                flowstudio: 1
                name: inner-step
                inputs: {j: {type: str}, i: {type: str}}
                outputs: {j: $t.text, cell: $c.text}
                nodes:
                  t: {type: text.template, inputs: {j: $inputs.j}, config: {template: "{{ j }}y"}}
                  c: {type: text.template, inputs: {i: $inputs.i, j: $t.text}, config: {template: "{{ i }}.{{ j }}"}}
"""

MESSAGES = """
inputs: {question: {type: str}}
outputs: {reply: $answer.text, history: $remember.messages}
models:
  default:
    model: scripted
    script:
      - {match: "(?s)be brief.*my name is Ann.*Hello Ann.*what is my name\\\\?$", reply: Ann}
      - {reply: "I do not know"}
nodes:
  start: {type: chat.append, config: {role: system}, inputs: {content: be brief}}
  said: {type: chat.append, inputs: {messages: $start.messages, content: my name is Ann}}
  heard: {type: chat.append, config: {role: assistant}, inputs: {messages: $said.messages, content: Hello Ann}}
  answer:
    type: llm.generate
    inputs: {messages: $heard.messages, question: $inputs.question}
    config: {prompt: "{{ question }}"}
  asked: {type: chat.append, inputs: {messages: $heard.messages, content: $inputs.question}}
  remember: {type: chat.append, config: {role: assistant}, inputs: {messages: $asked.messages, content: $answer.text}}
"""

HISTORY = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "my name is Ann"},
    {"role": "assistant", "content": "Hello Ann"},
]

SCENARIOS = [
    Scenario(
        "switch: a case takes its branch, the payload travels, the rest is skipped without a when",
        SWITCH,
        {"kind": "billing", "text": "refund please"},
        {"branch": "billing", "reply": "B:refund please!", "billing": "refund please"},
        _switch_statuses("route", "on_billing", "then_billing", "reply"),
    ),
    Scenario(
        "switch: two values share one branch",
        SWITCH,
        {"kind": "refund"},
        {"branch": "billing", "reply": "B:hello!", "billing": "hello"},
        _switch_statuses("route", "on_billing", "then_billing", "reply"),
    ),
    Scenario(
        "switch: an unknown value takes the default branch",
        SWITCH,
        {"kind": "something else"},
        {"branch": "other", "reply": "O:hello", "billing": None},
        _switch_statuses("route", "on_other", "reply"),
    ),
    Scenario(
        "switch: a value that is not text is matched as JSON",
        SWITCH,
        {"kind": True},
        {"branch": "flag", "reply": "F:hello", "billing": None},
        _switch_statuses("route", "on_flag", "reply"),
    ),
    Scenario(
        "switch: an int value",
        SWITCH,
        {"kind": 3},
        {"branch": "three", "reply": "3:hello", "billing": None},
        _switch_statuses("route", "on_three", "reply"),
    ),
    Scenario(
        "switch: an unknown value without a default fails the switch, naming the value",
        NO_DEFAULT,
        {"kind": "c"},
        None,
        {"route": "failed"},
        status="failed",
        error="no case for value 'c'",
    ),
    Scenario(
        "switch: without a payload the branch carries the value",
        NO_DEFAULT,
        {"kind": "a"},
        {"x": "A:a"},
        {"route": "succeeded", "on_a": "succeeded"},
    ),
    Scenario(
        "readiness: a node needing both branches is skipped; optional inputs read null",
        BOTH_BRANCHES,
        {"kind": "b"},
        {"both": None, "maybe": "-b", "history": [{"role": "user", "content": "hi"}]},
        {"route": "succeeded", "both": "skipped", "maybe": "succeeded", "turn": "succeeded"},
    ),
    Scenario(
        "readiness: a skipped switch skips every branch, its own outputs read null",
        SKIPPED_SWITCH,
        {"go": False},
        {"branch": None, "x": None},
        {"label": "skipped", "route": "skipped", "on_a": "skipped", "on_other": "skipped"},
    ),
    Scenario(
        "readiness: a skipped branch feeding a required input skips the node and what follows",
        READINESS,
        {"go": False},
        {
            "required": None,
            "downstream": None,
            "optional": [{"role": "user", "content": "runs"}],
            "after": "ordered",
        },
        {
            "branch": "skipped",
            "other": "succeeded",
            "required": "skipped",
            "downstream": "skipped",
            "chat": "skipped",
            "optional": "succeeded",
            "after": "succeeded",
        },
    ),
    Scenario(
        "readiness: with the branch taken everything runs",
        READINESS,
        {"go": True},
        {
            "required": "from branch runs",
            "downstream": "from branch runs",
            "optional": [{"role": "user", "content": "from branch"}, {"role": "user", "content": "runs"}],
            "after": "ordered",
        },
        {n: "succeeded" for n in ("branch", "other", "required", "downstream", "chat", "optional", "after")},
    ),
    Scenario(
        "join: every option that ran, in wiring order",
        JOIN,
        {"a": True, "b": False, "c": True},
        {"values": ["1", "3"], "count": "2", "first": "1"},
        _join_statuses("one", "three", "all", "count", "first"),
    ),
    Scenario(
        "join: every option skipped gives [] (merge is skipped: it has no first option)",
        JOIN,
        {"a": False, "b": False, "c": False},
        {"values": [], "count": "0", "first": None},
        _join_statuses("all", "count"),
    ),
    Scenario(
        "join: a null from a node that ran stays; flow inputs and literals are always available",
        JOIN_LITERALS,
        {"extra": "e"},
        {"values": [None, "e", "literal"]},
        {"gone": "skipped", "none": "succeeded", "all": "succeeded"},
    ),
    Scenario(
        "join: arrival order puts literals first, then nodes as they finished",
        ARRIVAL,
        {},
        {"wired": ["slow", "fast", "first"], "arrived": ["first", "fast", "slow"]},
        {"slow": "succeeded", "fast": "succeeded", "wired": "succeeded", "arrived": "succeeded"},
        calls={"slow": 1, "fast": 1},
    ),
    Scenario(
        "merge: a skipped branch falls back to a flow input or a literal",
        MERGE_FALLBACK,
        {"go": False},
        {"by_input": "from input", "by_literal": "a literal", "only_wires": None},
        {"branch": "skipped", "by_input": "succeeded", "by_literal": "succeeded", "only_wires": "skipped"},
    ),
    Scenario(
        "merge: the branch first when it ran",
        MERGE_FALLBACK,
        {"go": True},
        {"by_input": "from branch", "by_literal": "from branch", "only_wires": "from branch"},
        {"branch": "succeeded", "by_input": "succeeded", "by_literal": "succeeded", "only_wires": "succeeded"},
    ),
    Scenario(
        "optional variables: wired, unwired (default), declared (empty), wired to null (default)",
        OPTIONAL_VARIABLES,
        {"tone": "warm"},
        {"wired": "[warm]", "unwired": "[neutral]", "declared": "[]none", "null_wired": "hi you"},
        {"wired": "succeeded", "unwired": "succeeded", "declared": "succeeded", "null_wired": "succeeded"},
    ),
    Scenario(
        "optional variables: a wired value replaces the default",
        OPTIONAL_VARIABLES,
        {"tone": "", "name": "Bo"},
        {"wired": "[]", "unwired": "[neutral]", "declared": "[]none", "null_wired": "hi Bo"},
        {"wired": "succeeded", "unwired": "succeeded", "declared": "succeeded", "null_wired": "succeeded"},
    ),
    Scenario(
        "loop: collect accumulates an output over iterations; until sees the last one",
        LOOP_COLLECT,
        {},
        {"n": "aaa", "seen": ["a", "aa", "aaa"], "iterations": 3},
        {"count": "succeeded", "count[1].t": "succeeded", "count[2].t": "succeeded", "count[3].t": "succeeded"},
    ),
    Scenario(
        "loop: nested loops collecting give a list of lists",
        NESTED_COLLECT,
        {},
        {"rows": [["x.y", "x.yy"], ["xx.y", "xx.yy"]], "iterations": 2},
        {
            "outer": "succeeded",
            **{f"outer[{i}].mark": "succeeded" for i in (1, 2)},
            **{f"outer[{i}].inner": "succeeded" for i in (1, 2)},
            **{f"outer[{i}].inner[{j}].{n}": "succeeded" for i in (1, 2) for j in (1, 2) for n in ("t", "c")},
        },
    ),
    Scenario(
        "messages: chat.append builds a conversation that llm.generate continues",
        MESSAGES,
        {"question": "what is my name?"},
        {
            "reply": "Ann",
            "history": [
                *HISTORY,
                {"role": "user", "content": "what is my name?"},
                {"role": "assistant", "content": "Ann"},
            ],
        },
        {n: "succeeded" for n in ("start", "said", "heard", "answer", "asked", "remember")},
        calls={"answer": 1},
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
    assert all(n == 1 for n in Counter(s.node for s in steps).values()), "a node ran twice"
    assert dict(Counter(c.node for c in store.calls(result.run_id))) == scenario.calls
    if scenario.error:
        assert result.error is not None and scenario.error in result.error


async def test_generate_sends_the_conversation_as_turns_before_the_prompt() -> None:
    store = MemoryStore()
    plan = compile_flow(load_flow_text(HEADER + MESSAGES))
    result = await Engine(store).run(plan, {"question": "what is my name?"})
    (call,) = store.calls(result.run_id)
    assert call.request["messages"] == [*HISTORY, {"role": "user", "content": "what is my name?"}]


async def test_an_empty_prompt_sends_the_conversation_alone_and_agents_see_it() -> None:
    text = """
inputs: {history: {type: messages}}
outputs: {reply: $reply.text, agent: $agent.answer}
models:
  default: {model: scripted, script: [{match: "(?s)Conversation so far:\\nUser: hi", reply: "Answer: ok"}, {reply: hey}]}
nodes:
  reply: {type: llm.generate, inputs: {messages: $inputs.history}, config: {prompt: ""}}
  agent:
    type: llm.agent
    inputs: {messages: $inputs.history, task: $inputs.history}
    config: {tools: [calculator], prompt: "{{ task[-1].content }}"}
"""
    store = MemoryStore()
    history = [{"role": "user", "content": "hi"}]
    result = await Engine(store).run(compile_flow(load_flow_text(HEADER + text)), {"history": history})
    assert result.status == "succeeded", result.error
    assert result.outputs == {"reply": "hey", "agent": "ok"}
    reply = next(c for c in store.calls(result.run_id) if c.node == "reply")
    assert reply.request["messages"] == history


@pytest.mark.parametrize(
    ("flow", "words"),
    [
        (
            "inputs: {q: {type: str}}\nnodes:\n  g: {type: llm.generate, inputs: {messages: $inputs.q}, config: {prompt: hi}}\n"
            "models: {default: {model: scripted}}\n",
            "type mismatch: $inputs.q (str) cannot feed g.messages (messages | null: a list of {role, content} turns",
        ),
        (
            "nodes:\n  t: {type: text.template, config: {template: '{{ x }}', optional: [y]}}\n",
            "`optional` names 'y', which no template reads",
        ),
        (
            "nodes:\n  t: {type: text.template, config: {template: '{{ x }} {{ y | default(1) }}'}}\n",
            "'x' has no input",
        ),
        (
            "nodes:\n  s: {type: control.switch, inputs: {value: a}, config: {cases: {a: bad-name}}}\n",
            "branch name 'bad-name' is not a port name",
        ),
        (
            "nodes:\n  s: {type: control.switch, inputs: {value: a}, config: {cases: {a: branch}}}\n",
            "reserved",
        ),
        (
            "nodes:\n  s: {type: control.switch, inputs: {value: a}, config: {cases: {a: yes}}}\n"
            "  t: {type: text.template, inputs: {x: $s.no}, config: {template: '{{ x }}'}}\n",
            "node 's' has no output 'no'; its outputs are ['branch', 'yes']",
        ),
        (
            "nodes:\n  j: {type: control.join, inputs: {options: [a]}, config: {order: random}}\n",
            "order",
        ),
        (
            LOOP_COLLECT.replace("collect: [n_seen]", "collect: [n_sen]"),
            "the sub-flow has no output 'n_sen'",
        ),
    ],
)
def test_bad_constructs_are_refused_at_compile_time(flow: str, words: str) -> None:
    with pytest.raises(CompileError, match=None) as caught:
        compile_flow(load_flow_text(HEADER + flow))
    assert words in str(caught.value)


def test_messages_port_types() -> None:
    from studio.node import Messages
    from studio.types import PortType, accepts, from_annotation, parse_type

    messages = parse_type("messages")
    assert from_annotation(Messages) == messages and from_annotation(Messages | None) == parse_type("messages | null")
    assert accepts(messages, parse_type("list[dict]")) and accepts(parse_type("list"), messages)
    assert not accepts(messages, parse_type("list[str]")) and not accepts(PortType("str"), messages)


LOOP_ITERATIONS = """flowstudio: 1
name: reserved
outputs: {n: $spin.n}
nodes:
  spin:
    type: control.loop
    inputs: {n: a}
    config:
      until: "true"
      max_iterations: 2
      flow:
        flowstudio: 1
        name: step
        inputs: {n: {type: str}}
        outputs: {n: $t.text, iterations: $t.text}
        nodes:
          t: {type: text.template, inputs: {n: $inputs.n}, config: {template: "{{ n }}a"}}
"""


def test_a_loop_sub_flow_output_named_iterations_is_refused_by_validate(cli: CLI, tmp_path: Path) -> None:
    """It used to pass validate and crash the loop with a TypeError."""
    flow = tmp_path / "reserved.yaml"
    flow.write_text(LOOP_ITERATIONS)
    result = cli("validate", str(flow))
    assert result.code == 2, result.err
    assert "nodes.spin.config.flow" in result.err and "'iterations'" in result.err
    assert "Traceback" not in result.err


async def test_a_ported_flow_gets_shorter_with_collect_and_computes_the_same() -> None:
    """Before `collect`, keeping every draft meant threading a list through the loop's state and
    appending with a JMESPath trick; the same flow with `collect:` is shorter and equal."""
    results = {}
    for version in ("before", "after"):
        path = FIXTURES / "ported" / f"keep-drafts-{version}.yaml"
        result = await Engine(MemoryStore()).run(compile_flow(load_flow(path)), {"text": "tea"})
        assert result.status == "succeeded", result.error
        results[version] = (result.outputs, len(path.read_text().splitlines()))
    assert results["after"][0] == results["before"][0]
    assert results["after"][0] == {
        "final": "Tea is nice.",
        "drafts": ["Tea", "Tea is nice", "Tea is nice."],
        "rounds": 3,
    }
    assert results["after"][1] < results["before"][1]


def test_an_exported_package_types_messages_as_a_list_of_turns() -> None:
    from studio.export.source import annotation, data, example
    from studio.types import parse_type

    messages = parse_type("messages | null")
    assert annotation(messages) == "list[dict[str, str]] | None"
    assert eval(data(example(messages))) == [{"role": "user", "content": "example"}]


async def test_a_resumed_run_keeps_the_branch_its_switch_took(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("script:\n  - {error: {kind: auth}}\n")
    flow = tmp_path / "flow.yaml"
    flow.write_text(
        HEADER
        + f"""inputs: {{kind: {{type: str}}}}
outputs: {{answer: $answer.value}}
models: {{default: {{model: scripted/{script}}}}}
nodes:
  route: {{type: control.switch, inputs: {{value: $inputs.kind}}, config: {{cases: {{a: a, b: b}}}}}}
  on_a: {{type: llm.generate, inputs: {{q: $route.a}}, config: {{prompt: "{{{{ q }}}}"}}}}
  on_b: {{type: text.template, inputs: {{q: $route.b}}, config: {{template: "B"}}}}
  answer: {{type: control.merge, inputs: {{options: [$on_a.text, $on_b.text]}}}}
"""
    )
    store = MemoryStore()
    engine = Engine(store)
    failed = await engine.run(compile_flow(load_flow(flow)), {"kind": "a"})
    assert failed.status == "failed"
    script.write_text("script:\n  - {reply: A}\n")
    resumed = await runner.resume_on(engine, failed.run_id)
    assert (resumed.status, resumed.outputs) == ("succeeded", {"answer": "A"})
    last = {s.node: s.status for s in store.steps(failed.run_id)}
    assert last == {"route": "succeeded", "on_a": "succeeded", "on_b": "skipped", "answer": "succeeded"}
    assert Counter(s.node for s in store.steps(failed.run_id))["route"] == 1
