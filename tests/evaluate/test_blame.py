"""Blame on scripted flows whose culprit is known: a node made to go wrong on one example."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from studio.evaluate import blame as lib
from studio.evaluate.batch import BatchOptions, prepare_batch, run_prepared
from studio.flow.spec import ScriptRule
from studio.models.base import Request
from studio.models.scripted import ScriptedModel
from studio.store import SQLiteStore
from tests.conftest import CLI

FLOW = """\
flowstudio: 1
name: three-step
inputs:
  x: {type: str}
outputs:
  answer: $finish.text
models:
  default:
    model: scripted
    retries: 0
    script:
      - {match: "^Draft: one$", reply: "d-one"}
      - {match: "^Draft: two$", reply: "d-two"}
      - {match: "^Check: d-one$", reply: "wrong", chance: 0.4}
      - {match: "^Check: d-one$", reply: "k-one"}
      - {match: "^Check: d-two$", reply: "k-two"}
      - {match: "^Finish: k-one$", reply: "f-one"}
      - {match: "^Finish: k-two$", reply: "f-two"}
      - {match: "^Finish: ", reply: "nonsense"}
nodes:
  draft:
    type: llm.generate
    inputs: {v: $inputs.x}
    config: {form: completion, prompt: "Draft: {{ v }}"}
  check:
    type: llm.generate
    inputs: {v: $draft.text}
    config: {form: completion, prompt: "Check: {{ v }}"}
  finish:
    type: llm.generate
    inputs: {v: $check.text}
    config: {form: completion, prompt: "Finish: {{ v }}"}
"""
"""`check` answers wrongly on example `one` (and, re-sampled, still does 40% of the time)."""


@pytest.fixture
def experiment(tmp_path: Path) -> tuple[Path, str]:
    """A batch of the flow over two examples, one failing because of `check`."""
    (tmp_path / "flow.yaml").write_text(FLOW, encoding="utf-8")
    rows = [{"x": "one", "answer": "f-one"}, {"x": "two", "answer": "f-two"}]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    db = tmp_path / "flowstudio.db"
    store = SQLiteStore(db)
    options = BatchOptions(flow=str(tmp_path / "flow.yaml"), data=str(tmp_path / "data.jsonl"), metric="exact")
    result = asyncio.run(run_prepared(prepare_batch(options, store), store))
    store.close()
    assert [r.score for r in result.results] == [0.0, 1.0]
    return db, result.experiment_id


def test_a_chance_rule_answers_some_samples_and_every_greedy_call() -> None:
    model = ScriptedModel([ScriptRule(match="q", reply="fault", chance=0.5), ScriptRule(reply="right")])
    greedy = Request(prompt="q", temperature=0.0, extra={"seed": 3})
    assert asyncio.run(model.complete(greedy)).text == "fault"
    replies = [
        asyncio.run(model.complete(Request(prompt="q", temperature=0.9, extra={"seed": s}))).text for s in range(40)
    ]
    assert {"fault", "right"} == set(replies)
    again = [
        asyncio.run(model.complete(Request(prompt="q", temperature=0.9, extra={"seed": s}))).text for s in range(40)
    ]
    assert again == replies  # a seed decides the draw


async def test_blame_names_the_node_that_was_made_wrong(experiment: tuple[Path, str]) -> None:
    db, experiment_id = experiment
    store = SQLiteStore(db)
    failing = lib.failing_of_experiment(store, experiment_id)
    assert [f.example for f in failing] == [0]
    [blame] = await lib.blame_all(store, failing, lib.BlameOptions(samples=6))
    assert blame.culprit == "check"
    by_node = {n.node: n for n in blame.nodes}
    assert set(by_node) == {"draft", "check", "finish"}
    assert by_node["check"].flips > 0
    assert by_node["draft"].flips == 0 and by_node["finish"].flips == 0
    low, high = by_node["check"].interval()
    assert 0 < low <= by_node["check"].score <= high <= 1
    assert blame.calls == sum(n.calls for n in blame.nodes) > 0
    # upstream is reused: re-sampling `finish` calls only `finish`
    assert by_node["finish"].calls <= by_node["finish"].samples
    # the LLM cache makes a second blame free
    [again] = await lib.blame_all(store, failing, lib.BlameOptions(samples=6))
    assert again.culprit == "check" and again.calls == 0
    store.close()


async def test_the_call_budget_bounds_a_blame(experiment: tuple[Path, str]) -> None:
    db, experiment_id = experiment
    store = SQLiteStore(db)
    failing = lib.failing_of_experiment(store, experiment_id)
    [blame] = await lib.blame_all(store, failing, lib.BlameOptions(samples=6, budget_calls=3))
    assert 3 <= blame.calls <= 3 + 3  # stops after the counterfactual that crossed the budget
    assert sum(n.samples for n in blame.nodes) < 18
    store.close()


def test_cli_blames_an_experiment_and_the_studio_finds_it(cli: CLI, experiment: tuple[Path, str]) -> None:
    db, experiment_id = experiment
    done = cli("blame", experiment_id, "--db", str(db), "--json")
    assert done.code == 0, done.err
    result = done.json()
    assert result["failing"] == 1 and result["culprits"] == {"check": 1}
    [run] = result["runs"].values()
    assert run["culprit"] == "check" and run["example"] == 0
    assert run["nodes"][0]["node"] == "check" and run["nodes"][0]["low"] > 0
    store = SQLiteStore(db)
    stored = lib.blame_of_run(store, run["run_id"])
    assert stored is not None and stored["culprit"] == "check"
    store.close()
    table = cli("blame", experiment_id, "--db", str(db), "--example", "0", env={"COLUMNS": "80"})
    assert table.code == 0 and "check" in table.out
    assert run["run_id"] in table.out, "the whole run id, to paste into `trace`"
    assert max(len(line) for line in table.out.splitlines()) <= 80, table.out
    alone = cli("blame", run["run_id"], "--db", str(db), "--json")  # a run of the experiment: its metric
    assert alone.code == 0 and alone.json()["runs"][run["run_id"]]["culprit"] == "check"


def test_cli_blames_a_single_run_given_the_right_answer(cli: CLI, tmp_path: Path) -> None:
    (tmp_path / "flow.yaml").write_text(FLOW, encoding="utf-8")
    db = str(tmp_path / "solo.db")
    ran = cli("run", str(tmp_path / "flow.yaml"), "-i", "x=one", "--db", db, "--json")
    assert ran.code == 0 and ran.json()["outputs"] == {"answer": "nonsense"}
    run_id = ran.json()["run_id"]
    done = cli("blame", run_id, "--db", db, "--expect", "answer=f-one", "--json")
    assert done.code == 0, done.err
    assert done.json()["runs"][run_id]["culprit"] == "check"
    missing = cli("blame", run_id, "--db", db)
    assert missing.code == 2 and "--expect" in missing.err
    unknown = cli("blame", "nosuchthing", "--db", db)
    assert unknown.code == 2 and "nosuchthing" in unknown.err


def _trace_page() -> None:
    from studio.app.trace_page import render

    render()


def _experiments_page() -> None:
    from studio.app.experiments_page import render

    render()


async def test_the_studio_shows_the_likely_culprit(
    experiment: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamlit.testing.v1 import AppTest

    db, experiment_id = experiment
    store = SQLiteStore(db)
    failing = lib.failing_of_experiment(store, experiment_id)
    options = lib.BlameOptions(samples=6)
    blames = await lib.blame_all(store, failing, options)
    lib.save(store, blames, flow="three-step", target=experiment_id, options=options)
    store.close()
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    trace = AppTest.from_function(_trace_page, default_timeout=30)
    trace.query_params["run"] = blames[0].run_id
    trace.run()
    assert not trace.exception, trace.exception
    assert any(w.value.startswith("Likely culprit: `check`") for w in trace.warning)
    page = AppTest.from_function(_experiments_page, default_timeout=30)
    page.query_params["experiment"] = experiment_id
    page.run()
    assert not page.exception, page.exception
    table = next(t.value for t in page.dataframe if "culprit" in t.value.columns)
    assert list(table["culprit"]) == ["check"] and list(table["example"]) == [0]
    assert list(table["run"]) == [f"traces?run={blames[0].run_id}&node=check"], "opens the trace on the culprit"
    assert not [i for i in page.info if "flowstudio blame" in i.value], "blamed already: no hint to blame"
