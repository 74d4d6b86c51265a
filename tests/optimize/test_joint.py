"""Joint bootstrapped demos: every node of a multi-node flow shown the same good runs, made with
the signature instruction on the nodes that have none (DSPy's BootstrapFewShotWithRandomSearch)."""

from __future__ import annotations

import random

from studio.evaluate.datasets import Example
from studio.flow.spec import load_flow, load_flow_text
from studio.optimize.candidates import Path, tunable_nodes
from studio.optimize.demos import Trace
from studio.optimize.joint import JointPool, instructed, joint_moves, pooled, signature
from studio.store.base import StepRecord
from tests.optimize.conftest import DEMO_RULES, MakeTask
from tests.optimize.test_search import optimize
from tests.optimize.test_searched import TWO_NODES, solved, two_nodes

SIGNED_RULES = r"""      - {match: "(?s)produce the fields `extract`.*\"good\"[^\\n]*\\nKey:$", reply: good}
      - {match: "(?s)produce the fields `extract`.*\"bad\"[^\\n]*\\nKey:$", reply: bad}
      - {match: "(?s)Label: \\w+\\n.*Key: bad\\nLabel:$", reply: negative}
      - {match: "(?s)Key: good\\nLabel:$", reply: positive}
      - {reply: unsure}"""
"""`extract` copies the quoted word only under its signature sentence; `answer` labels `good`
zero-shot but `bad` only with a demo in its prompt. So every run of the flow as given is wrong,
the signed runs are right on good notes only, and only the joint move (the sentence, and demos
for both nodes from the signed good runs) gets bad notes right."""


def test_the_signature_names_the_template_variables_and_the_step() -> None:
    flow = load_flow_text(TWO_NODES.format(rules="      - {reply: x}"), "flow.yaml")
    extract, answer = tunable_nodes(flow)
    assert signature(extract) == "Given the fields `note`, produce the fields `extract`."
    assert signature(answer) == "Given the fields `key`, produce the fields `answer`."
    configs = {"extract": {"instructions": ""}, "answer": {"instructions": "Label the key."}}
    assert instructed([extract, answer], configs) == {
        ("nodes", "extract", "config", "instructions"): signature(extract)
    }


def test_joint_moves_set_every_node_from_the_same_runs() -> None:
    runs = [{"a": {"x": str(i), "text": f"a{i}"}, "b": {"y": f"a{i}", "text": f"b{i}"}} for i in range(6)]
    signed: dict[Path, str] = {
        ("nodes", "a", "config", "instructions"): "Given the fields `x`, produce the fields `a`."
    }
    moves = joint_moves(JointPool(signed, runs), random.Random(0))
    assert [m.description for m in moves] == [
        "4 joint bootstrapped demos, with the signature instruction",
        "4 joint bootstrapped demos, with the signature instruction (draw 2)",
        "2 joint bootstrapped demos, with the signature instruction",
    ]
    for move in moves:
        assert move.node == "a+b" and move.kind == "demos"
        a, b = move.edits[("nodes", "a", "config", "demos")], move.edits[("nodes", "b", "config", "demos")]
        assert [d["text"] for d in a] == [d["y"] for d in b]  # b is shown what a wrote in the same run
        assert move.edits[("nodes", "a", "config", "instructions")] == signed[("nodes", "a", "config", "instructions")]
    assert joint_moves(JointPool({}, runs[:1]), random.Random(0)) == []  # one run is no choice


async def test_the_joint_move_with_the_signature_fixes_a_flow_no_single_node_move_fixes(make_task: MakeTask) -> None:
    task = two_nodes(make_task, SIGNED_RULES)
    report, optimization = await solved(task)
    assert "extract+answer: " in report["after"]["move"] and "joint bootstrapped demos" in report["after"]["move"]
    written = load_flow(report["flow_out"]).spec.nodes
    assert written["extract"].config["instructions"] == "Given the fields `note`, produce the fields `extract`."
    extract, answer = written["extract"].config["demos"], written["answer"].config["demos"]
    assert [d["text"] for d in extract] == [d["key"] for d in answer]  # the same runs, node by node
    assert {d["key"]: d["text"] for d in answer} == {"good": "positive"}  # only runs that scored: good notes
    search = optimization.search
    assert search is not None and search.joint is not None and len(search.joint.runs) >= 2
    assert report["calls"] == task.ledger_calls() <= 200


async def test_a_flow_with_one_tunable_node_makes_no_joint_runs(make_task: MakeTask) -> None:
    task = make_task(DEMO_RULES)
    _, optimization = await optimize(task)
    assert optimization.search is not None and optimization.search.joint is None


def _trace(score: float, key: str, label: str | None, truncated: frozenset[str] = frozenset()) -> Trace:
    note = f'the film was "{key}", they said'
    steps = {
        "extract": StepRecord("extract", "succeeded", {"note": note}, {"text": key}),
        "answer": StepRecord(
            "answer", "succeeded" if label else "failed", {"key": key}, {"text": label} if label else None
        ),
    }
    example = Example(0, 1, {"text": note}, {"text": note}, {"label": label})
    return Trace(example, score, {"label": label}, None, steps, truncated)


def test_pooled_keeps_the_runs_that_scored_with_every_node_answered_in_full() -> None:
    nodes = tunable_nodes(load_flow_text(TWO_NODES.format(rules="      - {reply: x}"), "flow.yaml"))
    traces = [
        _trace(1.0, "good", "positive"),
        _trace(0.0, "bad", "positive"),  # wrong: not a demo
        _trace(1.0, "fine", None),  # `answer` failed: no demo for it, so none for the run
        _trace(1.0, "great", "positive", frozenset({"extract"})),  # cut off at the token cap
    ]
    pool = pooled(nodes, traces, {})
    assert pool.runs == [
        {
            "extract": {"note": 'the film was "good", they said', "text": "good"},
            "answer": {"key": "good", "text": "positive"},
        }
    ]
