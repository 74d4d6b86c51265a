"""Topology moves: removing a node rewires what read it, tidy and answer nodes feed the outputs,
and the search keeps a changed graph when it scores better."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from studio.errors import FlowError
from studio.evaluate.datasets import load_dataset
from studio.flow.spec import load_flow, load_flow_text
from studio.flow.templates import render as render_template
from studio.optimize import prepare
from studio.optimize.candidates import Candidate, build, combined, render
from studio.optimize.meter import Meter
from studio.optimize.moves import Move
from studio.optimize.optimization import Optimization
from studio.optimize.search import Search, Settings, calls_per_example
from studio.optimize.topology import (
    TIDY,
    answer_moves,
    calculate_moves,
    numeric_outputs,
    remove_moves,
    tidy_moves,
    topology_moves,
)
from studio.runtime.compiler import Plan, compile_flow
from studio.store import MemoryStore
from tests.optimize.conftest import NOTHING_RULES, SCRIPTED_MODELS, MakeTask, Task, options, write_jsonl

CHAIN = """\
flowstudio: 1
name: chain
inputs:
  question: {type: str}
  count: {type: int, default: 1}
outputs:
  answer: $polish.text
  cleaned: $clean.text
  joined: $join.text
models:
  default: {model: scripted, script: [{reply: ok}]}
  small: {model: scripted, script: [{reply: ok}]}
nodes:
  draft:
    type: llm.generate
    model: small
    inputs: {question: $inputs.question}
    config: {prompt: "Q: {{ question }}", instructions: Answer briefly.}
  clean:    # tidies the draft
    type: text.template
    inputs: {raw: $draft.text}
    config: {template: "{{ raw | trim }}"}
  polish:
    type: llm.generate
    inputs: {draft: $clean.text, question: $inputs.question}
    config: {prompt: "{{ question }} {{ draft }}"}
  join:
    type: text.template
    inputs: {parts: [$clean.text, $draft.text]}
    config: {template: "{{ parts | join(' ') }}"}
  number:
    type: text.template
    inputs: {n: $inputs.count}
    config: {template: "{{ n }}"}
  guarded:
    type: text.template
    when: inputs.question != ''
    inputs: {raw: $draft.text}
    config: {template: "{{ raw }}"}
  named:
    type: text.template
    inputs: {raw: $inputs.question}
    config: {template: "{{ raw }}"}
  later:
    type: text.template
    after: [named]
    inputs: {raw: $inputs.question}
    config: {template: "{{ raw }}"}
"""

ONE_MODEL = """\
flowstudio: 1
name: one-model
inputs:
  question: {type: str}
outputs:
  answer: $solve.text
models:
  default: {model: scripted, script: [{reply: ok}]}
nodes:
  solve:
    type: llm.generate
    inputs: {question: $inputs.question}
    config: {prompt: "Q: {{ question }}"}
  label:
    type: llm.classify
    inputs: {text: $solve.text}
    config: {labels: [yes, no]}
"""


def plan_of(text: str) -> Plan:
    return compile_flow(load_flow_text(text))


def applied(text: str, move: Move) -> Plan:
    """The flow with the move's edits, compiled (raises when they do not compile)."""
    return plan_of(render(text, move.edits))


def by_node(moves: list[Move]) -> dict[str, Move]:
    return {move.node or "": move for move in moves}


def test_removing_a_node_rewires_its_consumers_and_the_outputs() -> None:
    move = by_node(remove_moves(plan_of(CHAIN)))["clean"]
    assert move.kind == "topology"
    spec = applied(CHAIN, move).flow.spec
    assert "clean" not in spec.nodes
    assert spec.nodes["polish"].inputs == {"draft": "$draft.text", "question": "$inputs.question"}
    assert spec.nodes["join"].inputs == {"parts": ["$draft.text", "$draft.text"]}
    assert spec.outputs["cleaned"] == "$draft.text"
    assert spec.outputs["answer"] == "$polish.text"


def test_a_model_node_reading_a_flow_input_can_go_while_another_model_node_stays() -> None:
    move = by_node(remove_moves(plan_of(CHAIN)))["draft"]
    spec = applied(CHAIN, move).flow.spec
    assert spec.nodes["clean"].inputs == {"raw": "$inputs.question"}


def test_only_single_wire_same_type_unnamed_text_nodes_can_go() -> None:
    # polish and join read two wires, number turns an int into text, guarded has a `when` and
    # later runs after named
    assert set(by_node(remove_moves(plan_of(CHAIN)))) == {"draft", "clean", "later"}
    assert set(by_node(remove_moves(plan_of(ONE_MODEL)))) == {"solve"}  # classify never goes
    alone = ONE_MODEL.split("  label:")[0]
    assert remove_moves(plan_of(alone)) == []  # the last model node stays


def test_removing_a_node_drops_the_earlier_edits_beneath_it() -> None:
    plan = plan_of(CHAIN)
    earlier = {("nodes", "clean", "config", "template"): "{{ raw }}", ("models", "small", "temperature"): 0.7}
    move = by_node(remove_moves(plan))["clean"]
    edits = combined(earlier, move.edits)
    assert ("nodes", "clean", "config", "template") not in edits
    assert edits[("models", "small", "temperature")] == 0.7
    spec = plan_of(render(CHAIN, edits)).flow.spec
    assert "clean" not in spec.nodes
    with pytest.raises(FlowError, match=r"nodes\.clean\.type"):  # merged plainly, a stub of the node comes back
        load_flow_text(render(CHAIN, {**earlier, **move.edits}))


def test_the_search_builds_a_removal_on_top_of_edits_to_the_removed_node() -> None:
    flow = load_flow_text(CHAIN)
    unused: Any = None
    search = Search(
        flow=flow,
        plan=compile_flow(flow),
        train=unused,
        dev=unused,
        evaluator=unused,
        meter=Meter(),
        models={},
        settings=Settings(),
    )
    search.best = build(Candidate("c1", {("nodes", "clean", "config", "template"): "{{ raw }}"}, "tuned"), flow, {})
    assert search.best.plan is not None
    move = by_node(topology_moves(search.best.plan))["clean"]
    candidate = search._candidate(move, 1)
    assert candidate is not None and candidate.plan is not None
    assert "clean" not in candidate.plan.nodes


def test_tidy_keeps_the_first_nonempty_line_and_feeds_the_output() -> None:
    plan = plan_of(ONE_MODEL)
    move = by_node(tidy_moves(plan))["solve"]
    after = applied(ONE_MODEL, move)
    assert after.outputs["answer"].node == "solve_tidy"
    assert after.nodes["solve_tidy"].type == "text.template"
    assert after.flow.spec.nodes["solve_tidy"].inputs == {"text": "$solve.text"}
    assert after.flow.spec.nodes["label"].inputs == {"text": "$solve.text"}  # other readers keep the raw answer
    assert calls_per_example(after) == calls_per_example(plan)
    assert render_template(TIDY, {"text": "\n\n  positive \nBecause it says good.\n"}) == "positive"
    assert render_template(TIDY, {"text": ""}) == ""


def test_answer_reads_the_draft_and_the_inputs_with_the_same_model() -> None:
    plan = plan_of(CHAIN)
    assert set(by_node(answer_moves(plan))) == set()  # no flow output reads a generate node's answer directly
    text = CHAIN.replace("answer: $polish.text", "answer: $draft.text")
    move = by_node(answer_moves(plan_of(text)))["draft"]
    after = applied(text, move)
    spec = after.flow.spec.nodes["draft_answer"]
    assert spec.type == "llm.generate" and spec.model == "small"
    assert spec.inputs == {"question": "$inputs.question", "draft": "$draft.text"}
    assert spec.config["form"] == "completion" and spec.config["stop"] == ["\n"]
    assert spec.config["prompt"] == "Q: {{ question }}\nDraft: {{ draft }}\nFinal answer:"
    assert spec.config["instructions"] == "Answer briefly."
    assert after.flow.spec.outputs["answer"] == "$draft_answer.text"
    assert calls_per_example(after) == calls_per_example(plan_of(text)) + 1


def test_added_node_ids_are_not_reused_and_answers_do_not_stack() -> None:
    plan = plan_of(ONE_MODEL)
    answered = applied(ONE_MODEL, by_node(answer_moves(plan))["solve"])
    assert by_node(answer_moves(answered)) == {}  # no answer after an answer
    assert set(by_node(tidy_moves(answered))) == {"solve_answer"}
    taken = ONE_MODEL + "  solve_tidy:\n    type: text.template\n    config: {template: x}\n"
    assert by_node(tidy_moves(plan_of(taken))) == {}
    removed_tidy = by_node(remove_moves(applied(ONE_MODEL, by_node(tidy_moves(plan))["solve"])))
    assert render(ONE_MODEL, removed_tidy["solve_tidy"].edits).count("solve_tidy") == 0


def test_topology_moves_come_tidy_then_remove_then_answer() -> None:
    text = CHAIN.replace("answer: $polish.text", "answer: $draft.text")
    labels = [move.label for move in topology_moves(plan_of(text))]
    assert [label.split(": ")[1].split(" ")[0] for label in labels] == ["add", "remove", "remove", "remove", "add"]
    assert "draft_tidy" in labels[0] and "draft_answer" in labels[-1]


# -- the search ------------------------------------------------------------------------------

TRAILING_RULES = r"""      - {match: "(?s)\\bgood\\b[^\\n]*\\nLabel:$", reply: "positive\nThe review says good."}
      - {match: "(?s)\\bbad\\b[^\\n]*\\nLabel:$", reply: "negative\nThe review says bad."}
      - {reply: unsure}"""
"""Right on the first line, with an explanation after it that the exact metric rejects."""

POLISHED = """\
flowstudio: 1
name: opt-polished
inputs:
  text: {type: str}
outputs:
  label: $polish.text
models:
  default:
    model: scripted
    retry_backoff_s: 0
    script:
      - {match: "(?s)\\\\bgood\\\\b[^\\\\n]*\\\\nLabel:$", reply: positive}
      - {match: "(?s)Be brief.*\\\\bbad\\\\b[^\\\\n]*\\\\nLabel:$", reply: negative}
      - {reply: unsure}
nodes:
  answer:
    type: llm.generate
    inputs: {review: $inputs.text}
    config:
      form: completion
      prompt: "Text: {{ review }}\\nLabel:"
  polish:   # a second pass that only makes things worse
    type: llm.generate
    inputs: {draft: $answer.text}
    config:
      form: completion
      prompt: "Polish this label: {{ draft }}\\nPolished:"
"""


async def optimize(task: Task, budget: int = 200) -> tuple[dict[str, Any], Optimization]:
    optimization = Optimization(prepare(options(task, budget, proposer="none")), MemoryStore())
    return (await optimization.run()).report, optimization


async def test_a_tidy_step_wins_where_the_model_explains_its_answer(make_task: MakeTask) -> None:
    task = make_task(TRAILING_RULES)
    report, _ = await optimize(task)
    assert report["before"]["dev"] == 0.0
    assert report["after"]["dev"] == 1.0
    assert "add answer_tidy" in report["after"]["move"]
    written = load_flow(report["flow_out"])
    assert written.spec.nodes["answer_tidy"].type == "text.template"
    assert written.spec.outputs["label"] == "$answer_tidy.text"
    assert report["after"]["calls_per_example"] == report["before"]["calls_per_example"]  # no call more


async def test_removing_a_harmful_node_wins_and_later_moves_build_on_it(make_task: MakeTask) -> None:
    task = make_task(TRAILING_RULES)
    task.flow.write_text(POLISHED, encoding="utf-8")
    report, optimization = await optimize(task, 300)
    assert report["before"]["dev"] == 0.0
    assert report["after"]["dev"] == 1.0
    assert report["after"]["move"].startswith("polish: remove the node")
    written = load_flow(report["flow_out"])
    assert "polish" not in written.spec.nodes
    assert written.spec.outputs["label"] == "$answer.text"
    assert "Be brief" in written.spec.nodes["answer"].config["instructions"]  # tuned after the removal
    assert report["after"]["calls_per_example"] == 1.0 < report["before"]["calls_per_example"]
    assert optimization.search is not None
    assert any(c.kind == "topology" and c.examples for c in optimization.search.candidates)


# -- calculate -------------------------------------------------------------------------------

ARITHMETIC = (
    """\
flowstudio: 1
name: arithmetic
inputs:
  question: {{type: str}}
outputs:
  answer: $last.text
"""
    + SCRIPTED_MODELS
    + """\
nodes:
  solve:
    type: llm.generate
    inputs: {{question: $inputs.question}}
    config:
      form: completion
      instructions: Answer with a number.
      prompt: "Question: {{{{ question }}}}\\nAnswer:"
      demos: [{{question: "What is 1 plus 1?", text: "2"}}]
  last:   # the last word of the answer
    type: text.template
    inputs: {{text: $solve.text}}
    config: {{template: "{{{{ text.split() | last }}}}"}}
"""
)
PAIRS = ((12, 7), (30, 45), (8, 9), (61, 23), (5, 77), (40, 2))
TRAIN_PAIRS = ((3, 4), (14, 6), (22, 9), (50, 13), (7, 70), (19, 19))
"""Train's questions: none of dev's (the optimizer leaves dev's examples out of train)."""


def arithmetic_rules() -> str:
    """The model writes each question's expression right, but gets every answer wrong."""
    rules = [
        f'      - {{match: "What is {a} plus {b}\\\\?\\\\nAs an arithmetic expression:$", reply: "{a} + {b}"}}'
        for a, b in (*PAIRS, *TRAIN_PAIRS)
    ]
    return "\n".join([*rules, '      - {reply: "I think 1000"}'])


def arithmetic_rows(n: int, pairs: tuple[tuple[int, int], ...] = PAIRS) -> list[dict[str, str]]:
    return [{"question": f"What is {a} plus {b}?", "answer": str(a + b)} for a, b in (pairs * n)[:n]]


def write_arithmetic(task: Task) -> None:
    """12 train questions, 12 dev and 6 test, train's apart from the others."""
    write_jsonl(task.train, arithmetic_rows(12, TRAIN_PAIRS))
    write_jsonl(task.dev, arithmetic_rows(12))
    write_jsonl(task.test, arithmetic_rows(6))


def test_calculate_turns_the_answering_node_into_an_expression_writer() -> None:
    text = ARITHMETIC.format(rules=arithmetic_rules())
    plan = plan_of(text)
    (move,) = calculate_moves(plan, ["answer"])
    after = applied(text, move)
    assert after.flow.spec.outputs["answer"] == "$solve_calculate.result"
    assert "last" not in after.nodes  # the template only the output read goes with it
    tool = after.flow.spec.nodes["solve_calculate"]
    assert tool.type == "tool.python" and tool.config == {"tool": "calculator"}
    assert tool.inputs == {"expression": "$solve.text"}
    config = after.flow.spec.nodes["solve"].config
    assert config["prompt"] == "Question: {{ question }}\nAs an arithmetic expression:"
    assert config["form"] == "completion" and config["stop"] == ["\n", "="]
    assert "demos" not in config and "instructions" not in config  # they showed the old answers
    assert calls_per_example(after) == calls_per_example(plan)
    assert calculate_moves(after, ["answer"]) == []  # once only


def test_calculate_needs_a_numeric_output_and_keeps_a_template_read_elsewhere() -> None:
    text = ARITHMETIC.format(rules=arithmetic_rules())
    assert calculate_moves(plan_of(text), []) == []
    shared = text.replace("  answer: $last.text", "  answer: $last.text\n  word: $last.text")
    (move,) = calculate_moves(plan_of(shared), ["answer"])
    after = applied(shared, move)
    assert "last" in after.nodes and after.flow.spec.outputs["word"] == "$last.text"
    read_twice = text.replace("  answer: $last.text", "  answer: $last.text\n  raw: $solve.text")
    assert calculate_moves(plan_of(read_twice), ["answer"]) == []  # the raw answer has another reader
    classified = plan_of(ONE_MODEL.replace("answer: $solve.text", "answer: $label.label"))
    assert calculate_moves(classified, ["answer"]) == []  # a classify node writes labels, not expressions


def test_numeric_outputs_are_those_every_train_answer_is_a_number_for(tmp_path: Path) -> None:
    flow = load_flow_text(ARITHMETIC.format(rules=arithmetic_rules()))
    numbers = write_jsonl(tmp_path / "n.jsonl", [{"question": "q", "answer": a} for a in ("12", 7, "-3.5", " 40 ")])
    words = write_jsonl(tmp_path / "w.jsonl", [{"question": "q", "answer": a} for a in ("12", "twelve")])
    plan = compile_flow(flow)
    assert numeric_outputs(load_dataset(numbers, plan)) == ["answer"]
    assert numeric_outputs(load_dataset(words, plan)) == []


async def test_the_calculator_wins_where_the_model_writes_expressions_but_not_answers(make_task: MakeTask) -> None:
    task = make_task(NOTHING_RULES)
    task.flow.write_text(ARITHMETIC.format(rules=arithmetic_rules()), encoding="utf-8")
    write_arithmetic(task)
    report, _ = await optimize(task)
    assert report["before"]["dev"] == 0.0
    assert report["after"]["dev"] == 1.0
    assert "add solve_calculate" in report["after"]["move"]
    written = load_flow(report["flow_out"])
    assert written.spec.outputs["answer"] == "$solve_calculate.result"


async def test_no_move_made_from_the_old_answers_goes_onto_the_expression_writer(make_task: MakeTask) -> None:
    task = make_task(NOTHING_RULES)
    a, b = PAIRS[0]  # the output-format instruction gets this one answer right: it beats the input flow
    helped = f'      - {{match: "(?s)number only.*What is {a} plus {b}\\\\?\\\\nAnswer:$", reply: "{a + b}"}}'
    c, d = PAIRS[-1]  # and one expression is wrong, so the search goes on after the calculator wins
    rules = arithmetic_rules().replace(f'"{c} + {d}"', f'"{c} - {d}"')
    task.flow.write_text(ARITHMETIC.format(rules=f"{helped}\n{rules}"), encoding="utf-8")
    write_arithmetic(task)
    report, optimization = await optimize(task)
    assert optimization.search is not None
    candidates = optimization.search.candidates
    assert ["solve: output format"] in [c.changes for c in candidates]
    assert "add solve_calculate" in report["after"]["move"]
    on_top = [c for c in candidates if any("calculate" in change for change in c.changes[:-1])]
    assert on_top, "the search went on after the calculator won"
    assert not [c.changes for c in on_top if c.kind in ("demos", "instructions", "format")]
