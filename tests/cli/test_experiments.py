"""`flowstudio experiments`: every kind of experiment shows (issue 45, item 5), in 80 columns."""

from __future__ import annotations

from pathlib import Path

from studio.store import SQLiteStore
from studio.store.base import ExperimentRecord
from tests.conftest import CLI, FLOWS, SCRIPTS

TRIAGE = str(FLOWS / "ticket-triage.yaml")
SCRIPT = f"default=scripted/{SCRIPTS / 'triage.yaml'}"
DATA = str(FLOWS / "data" / "triage-labelled.jsonl")


def test_batch_blame_and_optimize_experiments_each_show_and_list_in_80_columns(cli: CLI, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.jsonl"  # the script answers billing: both are failing examples to blame
    wrong.write_text('{"ticket": "The app crashes", "category": "bug"}\n{"ticket": "It hangs", "category": "bug"}\n')
    batch = cli("batch", TRIAGE, "--data", str(wrong), "--expect", "category=category", "--model", SCRIPT, "--json")  # fmt: skip
    assert batch.code == 0, batch.err
    blame = cli("blame", batch.json()["experiment_id"], "--budget-calls", "8", "--samples", "1", "--json")
    assert blame.code == 0, blame.err
    search = cli(
        "optimize", TRIAGE, "--train", DATA, "--dev", DATA, "--metric", "exact", "--expect", "category=category",
        "--budget-calls", "100", "--minibatch", "4", "--proposer", "none", "--model", SCRIPT,
        "--out", str(tmp_path / "better.yaml"), "--json",
    )  # fmt: skip
    assert search.code == 0, search.err
    env = {"COLUMNS": "80"}
    shown = {
        "batch": cli("experiments", batch.json()["experiment_id"][:6], env=env),
        "blame": cli("experiments", blame.json()["blame_id"][:6], env=env),
        "optimize": cli("experiments", search.json()["experiment_id"][:6], env=env),
    }
    for kind, result in shown.items():
        assert result.code == 0 and "Traceback" not in result.err, (kind, result.err)
    assert "score (exact)" in shown["batch"].out
    assert "failing; likely culprits:" in shown["blame"].out
    assert "search:" in shown["optimize"].out and "before" in shown["optimize"].out
    listed = cli("experiments", env=env)
    lines = listed.out.splitlines()
    assert max(len(line) for line in lines) <= 80, listed.out
    assert lines[0].split() == ["experiment", "kind", "flow", "created", "status", "score", "errors", "cost", "$"]
    assert all("ticket-" in line for line in lines[2:] if line[:1].isalnum()), "the name breaks after its dash"
    assert not any(line.strip().startswith(("riage", "iage")) for line in lines), "never inside a word"


def test_a_search_still_running_and_an_unfinished_blame_show_their_fields(cli: CLI, tmp_path: Path) -> None:
    db = tmp_path / "flowstudio.db"
    store = SQLiteStore(db)
    running = {"status": "running", "calls": 40, "budget_calls": 300, "best_dev": 0.5, "scores": {"r": 1.0}}
    store.create_experiment(ExperimentRecord("aaaa000000000001", "optimize", "ticket-triage", summary=running))
    store.create_experiment(ExperimentRecord("bbbb000000000002", "blame", "ticket-triage"))
    store.close()
    shown = cli("experiments", "aaaa")
    assert shown.code == 0 and "Traceback" not in shown.err, shown.err
    assert "optimize aaaa000000000001 · ticket-triage: running" in shown.out and "budget_calls: 300" in shown.out
    unfinished = cli("experiments", "bbbb")
    assert unfinished.code == 0 and "blame bbbb000000000002 did not finish" in unfinished.out
    assert "batch --resume" not in unfinished.out  # only a batch continues that way
