"""Budgets mean what they say (issue 45, item 6): optimize refuses a budget that cannot try one
candidate and names the smallest that can; test scoring is reported apart on the budget's line;
blame's --budget-calls is for the whole blame, and blame takes id prefixes."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import CLI, FLOWS, SCRIPTS

TRIAGE = str(FLOWS / "ticket-triage.yaml")
SCRIPT = f"default=scripted/{SCRIPTS / 'triage.yaml'}"
DATA = str(FLOWS / "data" / "triage-labelled.jsonl")


def _optimize(cli: CLI, tmp_path: Path, budget: int, *extra: str) -> tuple[int, str, str]:
    done = cli(
        "optimize", TRIAGE, "--train", DATA, "--dev", DATA, "--metric", "exact", "--expect", "category=category",
        "--budget-calls", str(budget), "--minibatch", "4", "--proposer", "none", "--model", SCRIPT,
        "--out", str(tmp_path / "better.yaml"), *extra, env={"COLUMNS": "300"},
    )  # fmt: skip
    return done.code, done.out, done.err


def test_optimize_refuses_a_budget_that_cannot_try_a_candidate_and_the_smallest_tries_one(
    cli: CLI, tmp_path: Path
) -> None:
    code, _, err = _optimize(cli, tmp_path, 20)
    assert code == 2 and "too small to try even one candidate" in err, err
    smallest = int(re.search(r"give --budget-calls (\d+) or more", err).group(1))  # type: ignore[union-attr]
    assert cli("runs", "--json").json() == []  # nothing ran
    assert _optimize(cli, tmp_path, smallest - 1)[0] == 2
    code, out, err = _optimize(cli, tmp_path, smallest, "--test", DATA)
    assert code == 0, err
    assert "round 1: racing" in out + err, "a candidate was tried"
    budget_line = next(line for line in out.splitlines() if line.startswith("search:"))
    assert f"(budget {smallest} calls); scoring --test:" in budget_line and "outside the budget" in budget_line


def test_blame_budget_is_for_the_whole_blame_and_ids_may_be_short(cli: CLI, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.jsonl"  # the script answers billing: every example is a failing one
    wrong.write_text("".join(f'{{"ticket": "The app crashes, case {n}", "category": "bug"}}\n' for n in range(6)))
    batch = cli("batch", TRIAGE, "--data", str(wrong), "--expect", "category=category", "--model", SCRIPT, "--json")
    assert batch.code == 0, batch.err
    experiment = batch.json()["experiment_id"]
    blame = cli("blame", experiment[:6], "--budget-calls", "12", "--samples", "1", "--json")
    assert blame.code == 0, blame.err
    assert blame.json()["calls"] <= 12 + 2  # the last counterfactual may cross it by its own calls
    reached = blame.json()
    if reached["failing"] < reached["failing_found"]:  # the note names a budget that reaches them all
        assert re.search(r"give --budget-calls \d+ or so to blame them all", blame.err), blame.err
    run_id = cli("runs", "--json").json()[-1]["run_id"]
    one = cli("blame", run_id[:7], "--budget-calls", "6", "--samples", "1", "--json")
    assert one.code == 0, one.err
    assert one.json()["target"] == run_id
    missing = cli("blame", "zzzz")
    assert missing.code == 2 and "no experiment or run 'zzzz'" in missing.err
