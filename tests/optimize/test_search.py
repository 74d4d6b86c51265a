"""The search on scripted models: better demos and instructions win, weak candidates drop early,
the budget is never crossed, and the best flow so far survives an interruption."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from studio.flow.spec import load_flow
from studio.optimize import OptimizeResult, prepare
from studio.optimize.candidates import Candidate
from studio.optimize.meter import Meter
from studio.optimize.optimization import Optimization
from studio.optimize.search import Search, Settings, rung_sizes
from studio.runtime.compiler import compile_flow
from studio.store import MemoryStore, SQLiteStore, Store
from tests.optimize.conftest import (
    CONSTRAINT_RULES,
    DEMO_RULES,
    FLAKY_RULES,
    HALF_RULES,
    NOTHING_RULES,
    MakeTask,
    Task,
    options,
    rows,
    write_jsonl,
)


async def optimize(
    task: Task, budget: int = 150, store: Store | None = None, **extra: Any
) -> tuple[OptimizeResult, Optimization]:
    """Optimize in memory (fast) unless a store is given."""
    optimization = Optimization(prepare(options(task, budget, **extra)), store or MemoryStore())
    return await optimization.run(), optimization


async def test_labelled_demos_win_where_the_model_needs_an_example(make_task: MakeTask) -> None:
    task = make_task(DEMO_RULES)
    result, _ = await optimize(task)
    report = result.report
    assert report["before"]["dev"] == 0.0
    assert report["after"]["dev"] == 1.0
    assert "demos" in report["after"]["move"]
    written = load_flow(report["flow_out"])
    demos = written.spec.nodes["answer"].config["demos"]
    assert demos and all(set(d) == {"review", "text"} for d in demos)
    assert {d["text"] for d in demos} == {"positive", "negative"}  # spread over the answers
    assert "# the node the optimizer tunes" in Path(report["flow_out"]).read_text()  # comments survive


async def test_bootstrapped_demos_come_from_runs_that_scored(make_task: MakeTask) -> None:
    task = make_task(HALF_RULES)
    result, optimization = await optimization_of(task)
    assert result.report["before"]["dev"] == 0.5
    assert result.report["after"]["dev"] == 1.0
    assert optimization.search is not None
    good = {t.example.inputs["text"] for t in optimization.search.traces if t.score == 1.0}
    demos = load_flow(result.report["flow_out"]).spec.nodes["answer"].config["demos"]
    if "bootstrapped" in result.report["after"]["move"]:
        assert {d["review"] for d in demos} <= good
        assert all(d["text"] == "positive" for d in demos)  # only the runs that scored


async def optimization_of(task: Task) -> tuple[OptimizeResult, Optimization]:
    return await optimize(task)


async def test_an_output_format_constraint_wins_where_the_model_needs_it(make_task: MakeTask) -> None:
    task = make_task(CONSTRAINT_RULES)
    result, _ = await optimize(task)
    assert result.report["after"]["dev"] == 1.0
    instructions = load_flow(result.report["flow_out"]).spec.nodes["answer"].config["instructions"]
    assert "one of: negative, positive" in instructions


@pytest.mark.parametrize("budget", [40, 75, 130])
async def test_the_budget_is_a_hard_limit_counted_at_the_model(make_task: MakeTask, budget: int) -> None:
    task = make_task(FLAKY_RULES)
    result, _ = await optimize(task, budget)
    assert result.report["calls"] <= budget
    assert task.ledger_calls() == result.report["calls"]  # every call, retries included, and nothing else


async def test_retries_and_proposals_count_too(make_task: MakeTask) -> None:
    task = make_task(FLAKY_RULES)
    result, optimization = await optimize(task, 200)
    assert optimization.search is not None
    failed_attempts = sum(1 for line in task.ledger.read_text().splitlines() if '"error"' in line)
    assert failed_attempts > 0
    assert task.ledger_calls() == result.report["calls"] <= 200


async def test_successive_halving_drops_weak_candidates_on_the_first_minibatch(make_task: MakeTask) -> None:
    task = make_task(HALF_RULES)
    result, optimization = await optimize(task, 400, proposer="none")
    search = optimization.search
    assert search is not None
    baseline = search.candidates[0]
    sizes = rung_sizes(4, 16)
    for candidate in search.candidates[1:]:
        if not candidate.scores:
            continue
        assert candidate.examples in sizes
        evaluated = sorted(candidate.scores)
        if candidate.score_on(evaluated) < baseline.score_on(evaluated) and candidate.parent == "c0":
            assert candidate.examples == sizes[0], candidate.row()  # worse than the best: dropped at once
    full = sum(1 for c in search.candidates if c.examples == 16)
    assert full < len([c for c in search.candidates if c.scores])
    assert result.report["calls"] < 16 * len(search.candidates)


async def test_nothing_helps_keeps_the_input_flow(make_task: MakeTask) -> None:
    task = make_task(NOTHING_RULES)
    result, _ = await optimize(task, 80)
    report = result.report
    assert report["after"]["candidate"] == "c0"
    assert report["diff"] == ""
    assert Path(report["flow_out"]).read_text() == task.flow.read_text()


async def test_the_best_so_far_is_written_before_an_interruption(make_task: MakeTask) -> None:
    task = make_task(DEMO_RULES)
    store = MemoryStore()
    seen: list[str] = []

    def progress(*, event: str, best_id: str = "", **_: Any) -> None:
        if event == "best":
            seen.append(best_id)
            if best_id != "c0":
                raise KeyboardInterrupt

    optimization = Optimization(prepare(options(task)), store, progress=progress)
    with pytest.raises(KeyboardInterrupt):
        await optimization.run()
    out = task.folder / "flow.optimized.yaml"
    flow = load_flow(out)
    compile_flow(flow)
    assert flow.spec.nodes["answer"].config["demos"]
    record = store.get_experiment(optimization.experiment_id)
    assert record is not None and record.summary is not None
    assert record.summary["status"] == "interrupted"
    store.close()


async def test_running_again_replays_from_the_cache_and_counts_nothing(make_task: MakeTask) -> None:
    task = make_task(DEMO_RULES)
    store = SQLiteStore(task.folder / "flowstudio.db")
    # a budget the search does not exhaust: cache hits cost nothing, so under a binding budget a
    # replay has calls left over and searches further
    first, _ = await optimize(task, 400, store=store)
    assert "budget" not in first.report["stopped"], first.report["stopped"]
    made = task.ledger_calls()
    again, _ = await optimize(task, 400, store=store)
    store.close()
    assert again.report["calls"] == 0
    assert task.ledger_calls() == made
    assert again.report["after"]["dev"] == first.report["after"]["dev"]


async def test_every_run_is_in_the_store_under_the_experiment(make_task: MakeTask) -> None:
    task = make_task(DEMO_RULES)
    store = SQLiteStore(task.folder / "flowstudio.db")
    result, optimization = await optimize(task, store=store, test=str(task.test))
    try:
        record = store.get_experiment(result.experiment_id)
        assert record is not None and record.kind == "optimize"
        assert record.summary is not None and record.summary["status"] == "finished"
        runs = store.runs_of_experiment(result.experiment_id)
        assert optimization.search is not None
        dev_runs = {run for c in optimization.search.candidates for run in c.runs.values()}
        assert dev_runs <= {r.run_id for r in runs}
        assert len(runs) > len(dev_runs)  # bootstrap and test runs too
        assert result.report["after"]["test"] == 1.0
    finally:
        store.close()


async def test_report_files_sit_beside_the_flow(make_task: MakeTask) -> None:
    task = make_task(DEMO_RULES)
    result, _ = await optimize(task)
    folder = task.folder
    for name in ("flow.optimized.report.md", "flow.optimized.report.json", "flow.optimized.pareto.svg"):
        assert (folder / name).is_file(), name
    markdown = (folder / "flow.optimized.report.md").read_text()
    assert "```diff" in markdown and "+      demos:" in markdown
    assert "fewer calls on a typical example" in markdown  # how the race breaks ties, said where it shows
    assert "<svg" in (folder / "flow.optimized.pareto.svg").read_text()
    assert result.report["pareto"][-1]["score"] == 1.0


CLASSIFY = """\
flowstudio: 1
name: opt-classify
inputs:
  text: {type: str}
outputs:
  label: $classify.label
models:
  default:
    model: scripted
    script:
%s
nodes:
  classify:
    type: llm.classify
    inputs: {text: $inputs.text}
    config: {labels: [positive, negative]}
"""


async def test_a_move_without_effect_is_dropped_at_once(make_task: MakeTask) -> None:
    task = make_task(DEMO_RULES)
    task.flow.write_text(CLASSIFY % DEMO_RULES)  # labels are already listed: `list_labels: true` changes nothing
    _, optimization = await optimize(task, 200, proposer="none")
    assert optimization.search is not None
    same = [c for c in optimization.search.candidates if c.move == "classify: list_labels: true"]
    assert same and all(c.examples == 4 for c in same)
    assert optimization.search.best.score == 1.0


SHIFT_RULES = r"""      - {match: "(?s)\\bgood\\b[^\\n]*\\nLabel:$", reply: positive}
      - {match: "(?s)\\bbad\\b[^\\n]*\\nLabel:$", reply: negative}
      - {match: "(?s)Label: \\w+\\n.*\\bfine\\b[^\\n]*\\nLabel:$", reply: positive}
      - {match: "(?s)Label: \\w+\\n.*\\bawful\\b[^\\n]*\\nLabel:$", reply: negative}
      - {reply: unsure}"""
"""good and bad are right zero-shot; fine and awful only with a demo."""


def worded(rows_: list[dict[str, str]], positive: str, negative: str) -> list[dict[str, str]]:
    swap = {"good": positive, "bad": negative}
    return [{**row, "text": " ".join(swap.get(w, w) for w in row["text"].split())} for row in rows_]


async def test_a_tie_on_dev_is_broken_on_held_out_train_examples(make_task: MakeTask) -> None:
    task = make_task(SHIFT_RULES)
    write_jsonl(task.train, worded(rows(12, 0), "fine", "awful"))  # the dev set has only the easy words
    result, optimization = await optimize(task, 200, proposer="none")
    report = result.report
    assert report["before"]["dev"] == 1.0 == report["after"]["dev"]  # dev cannot tell them apart
    assert "labelled demos" in report["after"]["move"]
    search = optimization.search
    assert search is not None
    baseline, chosen = search.candidates[0], search.best
    assert report["after"]["candidate"] == chosen.id
    rows_ = sorted(set(chosen.held_out) & set(baseline.held_out))
    assert rows_ and chosen.held_out_on(rows_) == 1.0 > baseline.held_out_on(rows_) == 0.0
    shown = chosen.shown()
    assert not any(search.train.examples[i].inputs["text"] in shown for i in chosen.held_out)  # never its demos
    assert search.stopped == "the score is perfect on dev and on the held-out train examples"
    markdown = (task.folder / "flow.optimized.report.md").read_text()
    assert f"| 1.000 on {len(chosen.held_out)} |" in markdown  # the tie-break's evidence is in the report


async def test_a_race_too_dear_for_the_budget_leaves_out_the_dearest_candidates(make_task: MakeTask) -> None:
    task = make_task(NOTHING_RULES)
    _, optimization = await optimize(task, 60, proposer="none")
    assert optimization.search is not None
    raced = [c.move for c in optimization.search.candidates if c.round == 1]
    assert "default: temperature 0.7" in raced  # later in the move order than the strategies, but one call an example
    assert not any("strategy" in move for move in raced), raced


async def test_a_race_is_priced_so_that_its_dearest_candidate_can_reach_all_of_dev(make_task: MakeTask) -> None:
    """A race priced at the mean cost could afford a cheap candidate's later rungs but not the
    leader's, which then stopped short of dev while a worse, cheaper one reached it."""
    task = make_task(NOTHING_RULES)
    prepared = prepare(options(task, 60))
    unused: Any = None
    search = Search(
        flow=prepared.flow,
        plan=prepared.plan,
        train=unused,
        dev=SimpleNamespace(examples=[None] * 30),
        evaluator=unused,
        meter=Meter(),
        models={},
        settings=Settings(minibatch=8),
    )
    first = rung_sizes(8, 30)[0]
    racing = [
        Candidate(name, {}, name, plan=prepared.plan, calls=dict.fromkeys(range(first), cost))
        for name, cost in (("dear", 2), ("cheap", 1), ("cheaper", 1))
    ]
    first_rung = sum(search.estimate(c, first) for c in racing)
    assert search.race_cost(racing) >= first_rung + search.estimate(racing[0], 30 - first)
