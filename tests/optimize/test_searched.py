"""Searched demos: answers of an inner node found by re-running failing train runs downstream of it,
the only fix where the inner node has no labelled demos and no run is right to bootstrap from."""

from __future__ import annotations

import random
from typing import Any

from studio.flow.spec import load_flow
from studio.optimize.demo_search import groups, overlap, spans
from studio.optimize.moves import searched_moves
from studio.optimize.optimization import Optimization
from studio.runtime.compiler import compile_flow
from tests.optimize.conftest import SCRIPTED_MODELS, MakeTask, Task, rows, write_jsonl
from tests.optimize.test_search import optimize

TWO_NODES = (
    """\
flowstudio: 1
name: opt-searched
description: Picks the key word out of a note, then labels the word.
inputs:
  text: {{type: str, description: A note quoting one word}}
outputs:
  label: $answer.text
"""
    + SCRIPTED_MODELS
    + """\
nodes:
  extract:
    type: llm.generate
    inputs: {{note: $inputs.text}}
    config:
      form: completion
      prompt: "Note: {{{{ note }}}}\\nKey:"
  answer:
    type: llm.generate
    inputs: {{key: $extract.text}}
    config:
      form: completion
      prompt: "Key: {{{{ key }}}}\\nLabel:"
"""
)

KEY_RULES = r"""      - {match: "(?s)Key: \\w+\\n.*\"good\"[^\\n]*\\nKey:$", reply: good}
      - {match: "(?s)Key: \\w+\\n.*\"bad\"[^\\n]*\\nKey:$", reply: bad}
      - {match: "^Key: good\\nLabel:$", reply: positive}
      - {match: "^Key: bad\\nLabel:$", reply: negative}
      - {reply: unsure}"""
"""`extract` copies the quoted word only with a demo in its prompt; `answer` labels the bare word
only: zero-shot every run is wrong, and neither node has a labelled demo."""


def notes(n: int, seed: int) -> list[dict[str, str]]:
    return rows(n, seed, quoted=True)


def two_nodes(make_task: MakeTask, rules: str) -> Task:
    """The two-node flow on `rules`, 12 train and 16 dev notes."""
    task = make_task(rules)
    task.flow.write_text(TWO_NODES.format(rules=rules), encoding="utf-8")
    write_jsonl(task.train, notes(12, 0))
    write_jsonl(task.dev, notes(16, 1))
    return task


async def solved(task: Task) -> tuple[dict[str, Any], Optimization]:
    """The report and the optimization of `task` (200 calls, no proposer), once checked that the flow
    as given gets every dev example wrong and the optimized flow every one right."""
    result, optimization = await optimize(task, 200, proposer="none")
    assert result.report["before"]["dev"] == 0.0
    assert result.report["after"]["dev"] == 1.0
    return result.report, optimization


async def test_only_searched_demos_for_the_inner_node_fix_the_answer(make_task: MakeTask) -> None:
    task = two_nodes(make_task, KEY_RULES)
    report, optimization = await solved(task)
    assert "extract: " in report["after"]["move"] and "searched demos" in report["after"]["move"]
    demos = load_flow(report["flow_out"]).spec.nodes["extract"].config["demos"]
    assert demos and all(set(d) == {"note", "text"} for d in demos)
    assert all(d["text"] == ("good" if '"good"' in d["note"] else "bad") for d in demos)  # the quoted word
    search = optimization.search
    assert search is not None and search.searched is not None
    assert search.searched.groups == [("extract",)]  # `answer` is downstream of it: not a sibling
    assert search.searched.calls > 0  # the re-runs of `answer` are model calls, counted
    right = [f.choices[0] for f in search.searched.found[("extract",)]]
    assert right and all(
        c["answer"]["text"] == {"good": "positive", "bad": "negative"}[c["extract"]["text"]] for c in right
    )
    raced = {c.move for c in search.candidates}
    assert "extract: 2 searched demos (and downstream)" in raced  # the right re-run's demos for `answer`
    assert report["calls"] == task.ledger_calls() <= 200


PRODUCT = (
    """\
flowstudio: 1
name: opt-product
description: Reads two numbers out of an order and multiplies them.
inputs:
  text: {{type: str, description: An order}}
outputs:
  total: $multiply.result
"""
    + SCRIPTED_MODELS
    + """\
nodes:
  quantity:
    type: llm.generate
    inputs: {{order: $inputs.text}}
    config: {{form: completion, prompt: "Order: {{{{ order }}}}\\nHow many:"}}
  price:
    type: llm.generate
    inputs: {{order: $inputs.text}}
    config: {{form: completion, prompt: "Order: {{{{ order }}}}\\nPrice:"}}
  expression:
    type: text.template
    inputs: {{q: $quantity.text, p: $price.text}}
    config: {{template: "{{{{ q }}}} * {{{{ p }}}}"}}
  multiply:
    type: tool.python
    inputs: {{expression: $expression.text}}
    config: {{tool: calculator}}
"""
)

PRODUCT_RULES = r"""      - {match: "(?s)How many: \\d+\\n.*buys 3 [^\\n]*\\nHow many:$", reply: "3"}
      - {match: "(?s)How many: \\d+\\n.*buys 5 [^\\n]*\\nHow many:$", reply: "5"}
      - {match: "(?s)Price: \\d+\\n.*at 20 [^\\n]*\\nPrice:$", reply: "20"}
      - {match: "(?s)Price: \\d+\\n.*at 40 [^\\n]*\\nPrice:$", reply: "40"}
      - {reply: "1 + 1"}"""
"""Zero-shot both extractors write `1 + 1`; with demos they answer the dev orders right."""


async def test_sibling_extractors_are_searched_jointly_for_free_in_both_orders(make_task: MakeTask) -> None:
    task = make_task(PRODUCT_RULES)
    task.flow.write_text(PRODUCT.format(rules=PRODUCT_RULES), encoding="utf-8")
    train = [{"text": f"Ann buys {q} cups at {p} dollars each.", "total": q * p} for q, p in [(2, 31), (4, 17)]]
    write_jsonl(task.train, train * 3)
    dev = [("Bo buys 3 pens at 20 dollars each.", 60), ("Cy buys 5 mugs at 40 dollars each.", 200)]
    write_jsonl(task.dev, [{"text": text, "total": total} for text, total in dev])
    result, optimization = await optimize(task, 40, proposer="none")
    search = optimization.search
    assert search is not None and search.searched is not None
    searched = search.searched
    assert searched.groups == [("quantity", "price")]
    assert searched.calls == 0  # the template and the calculator call no model
    pool, other = searched.pool(("quantity", "price")), searched.pool(("quantity", "price"), -1)
    assert searched.ambiguous(("quantity", "price"))  # 2 * 31 == 31 * 2: the metric cannot tell
    first = {(d["quantity"]["text"], d["price"]["text"]) for d in pool}
    assert first == {("2", "31"), ("4", "17")}  # input order first
    assert {(d["quantity"]["text"], d["price"]["text"]) for d in other} == {("31", "2"), ("17", "4")}
    assert all(set(d["quantity"]) == {"order", "text"} for d in pool)
    assert result.report["after"]["dev"] == 1.0
    assert "quantity+price: " in result.report["after"]["move"]


def test_candidate_spans_are_quotes_numbers_clauses_and_the_whole_text() -> None:
    text = 'Case 8513, opened by Tessa, reads "The app was never terrific."'
    found = spans(text)
    assert found[0] == "The app was never terrific."
    assert "8513" in found and "Case 8513" in found and found[-1] == text
    assert overlap("The app was terrific", "the app") == 0.5


def test_sibling_groups_keep_a_node_and_its_downstream_apart(make_task: MakeTask) -> None:
    task = make_task(PRODUCT_RULES)
    task.flow.write_text(PRODUCT.format(rules=PRODUCT_RULES), encoding="utf-8")
    plan = compile_flow(load_flow(task.flow), {})
    assert groups(plan, ["quantity", "price"]) == [("quantity", "price")]
    assert groups(plan, ["quantity", "expression"]) == [("quantity",), ("expression",)]


PUNCTUATED_RULES = r"""      - {match: "^Key: \"?good\\.\"?\\nLabel:$", reply: positive}
      - {match: "^Key: \"?bad\\.\"?\\nLabel:$", reply: negative}
      - {reply: unsure}"""
"""`answer` labels the word with its full stop, quoted or not; `extract` never learns."""


async def test_spans_that_differ_only_in_quotes_are_one_answer(make_task: MakeTask) -> None:
    task = make_task(PUNCTUATED_RULES)
    task.flow.write_text(TWO_NODES.format(rules=PUNCTUATED_RULES), encoding="utf-8")
    punctuated = [
        {**row, "text": row["text"].replace(' was "', ' was: "').replace('", they', '.", they')} for row in notes(12, 0)
    ]
    write_jsonl(task.train, punctuated)
    write_jsonl(task.dev, notes(16, 1))
    _, optimization = await optimize(task, 120, proposer="none")
    assert optimization.search is not None and optimization.search.searched is not None
    searched = optimization.search.searched
    found = searched.found[("extract",)]
    assert found and all(len(f.choices) == 1 for f in found)  # `good.` and `"good."` were both right: one answer
    assert {f.choices[0]["extract"]["text"] for f in found} <= {'"good."', '"bad."'}  # the earliest span


BIASED_RULES = r"""      - {match: "^Key: bad\\nLabel:$", reply: negative}
      - {match: "^Key: [^\\n]*\\nLabel:$", reply: positive}
      - {reply: bad}"""
"""`extract` always writes `bad`; `answer` says positive to anything else, an empty key too."""


async def test_a_run_the_downstream_gets_right_with_an_empty_value_gives_no_demo(make_task: MakeTask) -> None:
    task = two_nodes(make_task, BIASED_RULES)
    _, optimization = await optimize(task, 200, proposer="none")
    search = optimization.search
    assert search is not None and search.searched is not None
    searched = search.searched
    assert search.failing and searched.runs == len(search.failing)  # the positive notes
    assert searched.uninformative == searched.runs  # `good` would flip them, but so does an empty key
    assert not searched.found


def test_searched_moves_lead_with_one_draw_each_way_then_larger_sets_then_downstream_demos() -> None:
    def pool(flip: bool) -> list[dict[str, dict[str, str]]]:
        return [
            {"q": {"o": f"o{i}", "text": str(i if flip else 9 - i)}, "calc": {"x": str(i), "text": "ok"}}
            for i in range(5)
        ]

    moves = searched_moves(("q",), [pool(False), pool(True)], random.Random(0))
    labels = [m.description for m in moves]
    assert labels[:4] == [
        "2 searched demos",
        "2 searched demos (other order)",
        "4 searched demos",
        "4 searched demos (other order)",
    ]
    assert all(m.node == "q" for m in moves)
    assert {p[1] for m in moves for p in m.edits} == {"q", "calc"}
    assert all(len(m.edits) == (2 if "downstream" in m.description else 1) for m in moves)
    assert labels.index("2 searched demos (and downstream)") > labels.index("2 searched demos (draw 2)")
    assert len(searched_moves(("q",), [pool(False)[:2]], random.Random(0))) == 2  # no 4-demo set from 2


async def test_where_re_runs_are_free_a_wrong_attempt_does_not_decide_the_roles(make_task: MakeTask) -> None:
    rules = r"""      - {match: "^Order: [^\\n]*at 31 [^\\n]*\\nHow many:$", reply: "31"}
      - {reply: "1 + 1"}"""  # zero-shot, the quantity extractor writes the price
    task = make_task(rules)
    task.flow.write_text(PRODUCT.format(rules=rules), encoding="utf-8")
    write_jsonl(task.train, [{"text": "Ann buys 2 cups at 31 dollars each.", "total": 62}] * 6)
    write_jsonl(task.dev, [{"text": "Bo buys 3 pens at 20 dollars each.", "total": 60}] * 2)
    _, optimization = await optimize(task, 30, proposer="none")
    assert optimization.search is not None and optimization.search.searched is not None
    found = optimization.search.searched.found[("quantity", "price")][0]
    pairs = [(c["quantity"]["text"], c["price"]["text"]) for c in found.choices]
    assert pairs == [("2", "31"), ("31", "2")]  # both right: alternatives in input order, not the closest first
