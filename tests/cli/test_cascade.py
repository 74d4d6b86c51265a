"""`batch --warm-cascade` seeds a cascade's memory with the teacher's answers; later runs (other
processes) recall them; `cascade report` shows escalation over time, cost per call, accuracy on
reviewed runs and the break-even point."""

from __future__ import annotations

import json
from pathlib import Path

from studio.evaluate.cascade import lines, report
from studio.store.feedback import FeedbackRecord
from studio.store.teacher import Decision
from tests.conftest import CLI

FLOW = """flowstudio: 1
name: capitals
inputs: {question: {type: str}}
outputs: {answer: $ask.text}
models:
  default:
    model: scripted
    script:
      - {match: "France[\\\\s\\\\S]*France", reply: Paris}
      - {replies: [Lyon, Nice, Metz]}
  big:
    model: scripted
    input_cost_per_token: 0.001
    output_cost_per_token: 0.001
    script:
      - {match: France, reply: Paris}
      - {match: Spain, reply: Madrid}
      - {reply: Rome}
nodes:
  ask:
    type: llm.generate
    inputs: {question: $inputs.question}
    config: {prompt: "{{ question }}", strategy: cascade, teacher: big, samples: 3, agree: 2, recall: 2}
"""


def test_warming_then_runs_then_the_report(cli: CLI, tmp_path: Path) -> None:
    flow = tmp_path / "capitals.yaml"
    flow.write_text(FLOW)
    data = tmp_path / "train.jsonl"
    rows = [("capital of France?", "Paris"), ("capital of Spain?", "Madrid"), ("capital of Italy?", "Rome")]
    data.write_text("".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in rows))
    warmed = cli("batch", str(flow), "--data", str(data), "--warm-cascade", "--json")
    assert warmed.code == 0, warmed.err
    assert json.loads(warmed.out)["score"] == 1.0  # the teacher answered every example

    student = cli("run", str(flow), "-i", "question=Tell me the capital of France", "--json")
    assert student.code == 0, student.err
    assert json.loads(student.out)["cost_usd"] == 0  # recalled the warmed answer: the student alone
    teacher = cli("run", str(flow), "-i", "question=And the capital of Spain?", "--json")
    assert json.loads(teacher.out)["outputs"] == {"answer": "Madrid"}
    run_id = json.loads(student.out)["run_id"]
    assert cli("review", run_id, "--verdict", "good").code == 0

    made = cli("cascade", "report", str(flow), "--window", "1", "--json")
    assert made.code == 0, made.err
    body = json.loads(made.out)
    assert (body["flow"], body["calls"], body["escalated"], body["warm_calls"]) == ("capitals", 2, 1, 3)
    assert body["warm_cost_usd"] > 0 and body["student_cost_usd"] == 0
    assert [w["escalated"] for w in body["windows"]] == [0, 1]
    assert body["accuracy"][1] == {"by": "student", "reviewed": 1, "good": 1, "share": 1.0}
    text = cli("cascade", "report", "capitals")
    assert "escalated to the teacher: 1 (50%)" in text.out and "break-even" in text.out


def test_warming_is_refused_on_ray(cli: CLI, tmp_path: Path) -> None:
    refused = cli("batch", "f.yaml", "--data", "d.jsonl", "--warm-cascade", "--executor", "ray")
    assert refused.code == 2 and "--warm-cascade runs the batch in this process" in refused.err


def _decision(by: str, student: float, teacher: float, run_id: str, reason: str = "1 of 3 agreed") -> Decision:
    return Decision(
        "f", "n", by, reason, 1, 3, None, student, teacher, run_id, created_at=f"2026-12-04T10:00:0{run_id}"
    )


def test_the_break_even_is_the_warming_cost_over_each_calls_saving() -> None:
    warm = [_decision("teacher", 0.0, 0.01, str(i), reason="warming the memory") for i in range(4)]  # $0.04 up front
    live = [_decision("student", 0.001, 0.0, str(i)) for i in range(4, 8)]
    live += [_decision("teacher", 0.001, 0.01, "8")]
    bad = FeedbackRecord("8", score=0.0, value="bad")
    good = [FeedbackRecord(r, score=1.0, value="good") for r in ("4", "5")]
    made = report("f", [*warm, *live], [*good, bad], window=2)
    assert (made.calls, made.escalated, made.warm_calls) == (5, 1, 4)
    assert made.cost_per_call == (5 * 0.001 + 0.01) / 5  # 0.003
    assert made.saving_per_call == 0.01 - 0.003
    assert round(made.break_even_calls or 0, 3) == round(0.04 / 0.007, 3)  # about 5.7 calls
    assert [(w.first, w.calls, w.escalated) for w in made.windows] == [(1, 2, 0), (3, 2, 0), (5, 1, 1)]
    assert [(a.by, a.reviewed, a.good) for a in made.accuracy] == [("all", 3, 2), ("student", 2, 2), ("teacher", 1, 0)]
    text = "\n".join(lines(made))
    assert "break-even: after 6 calls (1 more to go" in text
    assert "accuracy (teacher answered): 0/1 reviewed runs good (0%)" in text


def test_a_report_without_calls_says_so() -> None:
    assert lines(report("f", [], [])) == [
        "cascade report: f",
        "no cascade calls recorded yet (a node with `strategy: cascade` records each call)",
    ]


def test_the_trace_says_who_answered_each_cascade_call_and_why(cli: CLI, tmp_path: Path) -> None:
    flow = tmp_path / "capitals.yaml"
    flow.write_text(FLOW)
    ran = cli("run", str(flow), "-i", "question=capital of Spain?", "--json")
    shown = cli("trace", json.loads(ran.out)["run_id"])
    assert shown.code == 0, shown.err
    assert (
        "cascade ask: teacher answered (1 of 3 samples agreed (2 needed)); student $0.000000, teacher $0."
        in " ".join(shown.out.split())
    )


async def test_reviewed_runs_seed_the_memory_good_ones_as_given_corrected_ones_as_corrected(
    cli: CLI, tmp_path: Path
) -> None:
    from studio.flow.spec import load_flow
    from studio.runtime.compiler import compile_flow
    from studio.runtime.engine import Engine
    from studio.runtime.memory import book_for
    from studio.store import SQLiteStore

    flow = tmp_path / "capitals.yaml"
    flow.write_text(FLOW.replace("samples: 3, agree: 2", "samples: 1, agree: 1"))  # the student always answers
    store = SQLiteStore(tmp_path / "flowstudio.db")  # the `cli` fixture's store
    plan = compile_flow(load_flow(flow))
    ids = [(await Engine(store).run(plan, {"question": q})).run_id for q in ("Spain?", "Peru?", "Chile?")]
    store.add_feedback(FeedbackRecord(ids[0], score=1.0, value="good"))
    store.add_feedback(FeedbackRecord(ids[1], score=0.0, value="bad", correction={"answer": "Lima"}))
    store.add_feedback(FeedbackRecord(ids[2], score=0.0, value="bad"))  # nothing to keep
    assert book_for(store).examples("capitals") == []
    seeded = cli("cascade", "seed", str(flow), "--from-reviews", "--json")
    assert seeded.code == 0, seeded.err
    assert json.loads(seeded.out) == {"flow": "capitals", "runs": 3, "examples": 2}
    kept = {e.query: (e.output, e.run_id) for e in book_for(store).examples("capitals", "ask")}
    store.close()
    assert kept == {"Spain?": ("Lyon", ids[0]), "Peru?": ("Lima", ids[1])}  # a good run's own answer; the correction
