"""`flowstudio optimize`: the JSON contract, the written flow, and bad input refused before any call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from studio.cli import main
from tests.conftest import CLI
from tests.optimize.conftest import DEMO_RULES, MakeTask, Task, rows, write_jsonl

KEYS = {"experiment_id", "flow_out", "calls", "tokens", "cost_usd", "before", "after", "pareto", "reviewed_examples"}


def args(task: Task, *extra: str, budget: str = "120") -> list[str]:
    return [
        "optimize",
        str(task.flow),
        "--train",
        str(task.train),
        "--dev",
        str(task.dev),
        "--metric",
        "exact",
        "--budget-calls",
        budget,
        "--minibatch",
        "4",
        "--db",
        str(task.folder / "flowstudio.db"),
        *extra,
    ]


def test_json_contract_and_the_written_flow_validates(make_task: MakeTask, cli: CLI) -> None:
    task = make_task(DEMO_RULES)
    out = task.folder / "better.yaml"
    env = {"FLOWSTUDIO_SCRIPTED_LEDGER": str(task.ledger)}
    done = cli(*args(task, "--test", str(task.test), "--out", str(out), "--json"), env=env)
    assert done.code == 0, done.err
    data = done.json()
    assert set(data) == KEYS
    assert set(data["before"]) == set(data["after"]) == {"dev", "test"}
    assert data["before"]["test"] == 0.0 and data["after"]["test"] == 1.0
    assert data["flow_out"] == str(out)
    assert all(set(p) == {"score", "cost_per_example", "candidate"} for p in data["pareto"])
    assert 0 < data["calls"] <= 120
    assert cli("validate", str(out)).code == 0
    shown = cli("experiments", data["experiment_id"], "--db", str(task.folder / "flowstudio.db"), "--json").json()
    assert shown["kind"] == "optimize" and shown["runs"] > 0


def test_without_test_set_the_test_scores_are_null(make_task: MakeTask) -> None:
    task = make_task(DEMO_RULES)
    done = CliRunner().invoke(main, [*args(task), "--json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    assert data["before"]["test"] is None and data["after"]["test"] is None
    assert Path(data["flow_out"]) == task.folder / "flow.optimized.yaml"


def test_people_get_a_summary_table(make_task: MakeTask) -> None:
    task = make_task(DEMO_RULES)
    done = CliRunner().invoke(main, args(task))
    assert done.exit_code == 0, done.output
    assert "before" in done.stdout and "after" in done.stdout and "flow.optimized.yaml" in done.stdout
    said = done.stderr  # what a log without a terminal keeps: each step of the search, as a line
    assert "bootstrapping demos from" in said and "round 1: racing" in said and "search stopped" in said, said


def _empty(task: Task) -> list[str]:
    task.train.write_text("")
    return []


def _tiny(task: Task) -> list[str]:
    write_jsonl(task.train, rows(3, 0))
    return []


def _dev_without_label(task: Task) -> list[str]:
    write_jsonl(task.dev, [{"text": row["text"]} for row in rows(8, 1)])
    return []


def _zero_metric(task: Task) -> list[str]:
    return ["--metric", "tests.optimize.metrics:always_zero"]


def _small_budget(task: Task) -> list[str]:
    return ["--budget-calls", "10"]


def _out_is_input(task: Task) -> list[str]:
    return ["--out", str(task.flow)]


def _unknown_proposer(task: Task) -> list[str]:
    return ["--proposer", "nobody"]


@pytest.mark.parametrize(
    ("breaks", "message"),
    [
        (_empty, "no rows"),
        (_tiny, "at least 4"),
        (_dev_without_label, "'label'"),
        (_zero_metric, "scores 0 even when the outputs equal the expected values"),
        (_small_budget, "too small"),
        (_out_is_input, "never changes it in place"),
        (_unknown_proposer, "proposer alias 'nobody'"),
    ],
)
def test_bad_input_exits_2_before_any_model_call(
    make_task: MakeTask, breaks: object, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = make_task(DEMO_RULES)
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # module:function metrics import from here
    extra = breaks(task)  # type: ignore[operator]
    done = CliRunner().invoke(main, [*args(task), *extra])
    assert done.exit_code == 2, done.output
    assert message in done.stderr
    assert "Traceback" not in done.output
    assert task.ledger_calls() == 0
    assert not (task.folder / "flow.optimized.yaml").exists()
