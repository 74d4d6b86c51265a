"""The optimizer reads reviews: a reviewed dataset is its train set, and the reviewer's comment on a
failing example reaches the proposer, whose instruction then carries the comment's word."""

from __future__ import annotations

import json
from pathlib import Path

from studio.flow.spec import load_flow
from studio.optimize import prepare
from studio.optimize.optimization import Optimization
from studio.reviews.dataset import COMMENT_COLUMN, NODE_COLUMN, RUN_COLUMN
from studio.store import MemoryStore
from tests.optimize.conftest import MakeTask, make_task, options, rows, write_jsonl
from tests.optimize.test_blame_search import task
from tests.optimize.test_search import optimize

__all__ = ["make_task"]  # the optimizer tests' fixture, used here

RULES = r"""      - {match: "(?s)You improve the instructions.*the reviewer said: [^\n]*sarcasm", reply: "Watch for sarcasm: answer positive or negative only."}
      - {match: "You improve the instructions", reply: "Answer carefully."}
      - {match: "(?s)sarcasm.*\\bgood\\b[^\\n]*\\nLabel:$", reply: positive}
      - {match: "(?s)sarcasm.*\\bbad\\b[^\\n]*\\nLabel:$", reply: negative}
      - {reply: unsure}"""
"""The proposer writes the word `sarcasm` only when a reviewer's comment says it; the flow answers
right only under an instruction holding it."""


async def test_the_reviewers_comment_reaches_the_proposed_instruction(make_task: MakeTask) -> None:
    task = make_task(RULES)
    reviewed = [
        {**row, RUN_COLUMN: f"{n:016x}", COMMENT_COLUMN: "it missed the sarcasm in this one"}
        for n, row in enumerate(rows(12, 0))
    ]
    write_jsonl(task.train, reviewed)  # what `dataset from-reviews` writes: extra columns ride along
    result, _ = await optimize(task, 200)
    report = result.report
    assert report["before"]["dev"] == 0.0 and report["after"]["dev"] == 1.0
    assert report["reviewed_examples"] == {"train": 12, "dev": 0} and report["calls"] <= 200
    written = load_flow(report["flow_out"]).spec.nodes["answer"].config["instructions"]
    assert "sarcasm" in written


async def test_without_comments_the_proposer_has_nothing_to_reflect_on(make_task: MakeTask) -> None:
    task = make_task(RULES)
    result, _ = await optimize(task, 200)
    assert result.report["after"]["dev"] == 0.0  # the control: the word came from the comment
    assert "sarcasm" not in json.dumps(result.report.get("after", {}))


async def test_nodes_the_reviewers_blamed_are_searched_first(tmp_path: Path) -> None:
    made = task(tmp_path)
    reviewed = [{**row, RUN_COLUMN: f"{n:016x}", NODE_COLUMN: "note"} for n, row in enumerate(rows(12, 0))]
    write_jsonl(made.train, reviewed)
    optimization = Optimization(prepare(options(made, 200)), MemoryStore())
    await optimization.run()
    search = optimization.search
    assert search is not None and search.blamed == {"note": 12}  # taken from the reviews, no re-runs
    first_round = [c for c in search.candidates if c.round == 1]
    assert first_round and search.touched[first_round[0].id] == "note"
