"""Blame's counterfactual kinds on scripted flows where only one kind can fix the culprit.

`check` answers wrongly on example `one` every time it is asked the same prompt (no `chance`:
re-sampling never fixes it); it answers right only when its prompt changes: shown the demo of
example `two` (the `demos` kind) or asked as the optimizer's variant words it (the `variant` kind).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from studio.evaluate import blame as lib
from studio.evaluate import counterfactuals as cf
from studio.evaluate.batch import BatchOptions, prepare_batch, run_prepared
from studio.flow.spec import load_flow
from studio.store import SQLiteStore
from studio.store.base import ExperimentRecord, new_id
from tests.conftest import CLI

SCRIPT = """\
models:
  default:
    model: scripted
    retries: 0
    script:
      - {match: "^Draft: one$", reply: "d-one"}
      - {match: "^Draft: two$", reply: "d-two"}
      - {match: "Draft: one$", reply: "d-one"}
      - {match: "^Verify: d-one$", reply: "k-one"}
      - {match: "Check: d-two$", reply: "k-two"}
      - {match: "d-bad wrong", reply: "wrong"}
      - {match: "k-two\\\\s+Check: d-one$", reply: "k-one"}
      - {match: "Check: ", reply: "wrong"}
      - {match: "^Finish: k-one$", reply: "f-one"}
      - {match: "^Finish: k-two$", reply: "f-two"}
      - {match: "Finish: ", reply: "nonsense"}
"""


def flow_text(check_config: str) -> str:
    """The three-step flow with `check`'s config as given."""
    return f"""\
flowstudio: 1
name: three-kinds
inputs:
  x: {{type: str}}
outputs:
  answer: $finish.text
{SCRIPT}nodes:
  draft:
    type: llm.generate
    inputs: {{v: $inputs.x}}
    config: {{form: completion, prompt: "Draft: {{{{ v }}}}"}}
  check:
    type: llm.generate
    inputs: {{v: $draft.text}}
    config: {check_config}
  finish:
    type: llm.generate
    inputs: {{v: $check.text}}
    config: {{form: completion, prompt: "Finish: {{{{ v }}}}"}}
"""


ZERO_SHOT = '{form: completion, prompt: "Check: {{ v }}"}'
BAD_DEMO_FIRST = (
    '{form: completion, prompt: "Check: {{ v }}", demos: [{v: d-bad, text: wrong}, {v: d-two, text: k-two}]}'
)


async def batch(folder: Path, check_config: str) -> tuple[Path, str]:
    """Run the flow over examples `one` (fails because of `check`) and `two` (scores 1)."""
    (folder / "flow.yaml").write_text(flow_text(check_config), encoding="utf-8")
    rows = [{"x": "one", "answer": "f-one"}, {"x": "two", "answer": "f-two"}]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    db = folder / "flowstudio.db"
    store = SQLiteStore(db)
    options = BatchOptions(flow=str(folder / "flow.yaml"), data=str(folder / "data.jsonl"), metric="exact")
    result = await run_prepared(prepare_batch(options, store), store)
    store.close()
    assert [r.score for r in result.results] == [0.0, 1.0]
    return db, result.experiment_id


async def blame_with(db: Path, experiment_id: str, *kinds: str) -> lib.RunBlame:
    store = SQLiteStore(db)
    try:
        failing = lib.failing_of_experiment(store, experiment_id)
        [blame] = await lib.blame_all(store, failing, lib.BlameOptions(samples=4, counterfactuals=kinds))
    finally:
        store.close()
    return blame


@pytest.mark.parametrize("config", [ZERO_SHOT, BAD_DEMO_FIRST], ids=["demos-from-good-runs", "own-demos"])
async def test_only_other_demos_fix_the_culprit(tmp_path: Path, config: str) -> None:
    db, experiment_id = await batch(tmp_path, config)
    resampled = await blame_with(db, experiment_id, "resample")
    assert resampled.culprit is None  # re-sampling alone never fixes `check`
    assert all(set(n.kinds) == {"resample"} for n in resampled.nodes)
    blame = await blame_with(db, experiment_id, "resample", "demos")
    assert blame.culprit == "check"
    check = next(n for n in blame.nodes if n.node == "check")
    assert check.flipped_by == ["demos"]
    assert check.kinds["resample"].flips == 0 and check.kinds["resample"].samples >= 4
    assert 1 <= check.kinds["demos"].flips <= check.kinds["demos"].samples <= 4
    assert check.samples == sum(t.samples for t in check.kinds.values())
    assert check.calls == sum(t.calls for t in check.kinds.values())
    assert blame.calls == sum(n.calls for n in blame.nodes)
    assert check.best == "demos" and check.score == check.kinds["demos"].rate > 0
    low, high = check.interval()
    assert 0 < low <= check.score <= high <= 1
    assert all(not n.flips for n in blame.nodes if n.node != "check")


def test_a_node_is_blamed_by_its_strongest_kind() -> None:
    """Re-sampling a prompt-bound fault never fixes it; the culprit's demos always do, while a node
    downstream repairs a wrong value in some re-samples: pooled, the culprit would lose."""
    culprit, downstream = lib.NodeBlame("check"), lib.NodeBlame("finish")
    for _ in range(8):
        culprit.count("resample", False, 1)
    for _ in range(3):
        culprit.count("demos", True, 1)
        downstream.count("demos", False, 1)
    for flipped in (True, True, False, False):
        downstream.count("resample", flipped, 1)
    assert culprit.flips / culprit.samples < downstream.flips / downstream.samples  # 3/11 pooled against 2/7
    assert culprit.best == "demos" and culprit.score == 1.0 and culprit.interval() == lib.wilson(3, 3)
    assert downstream.best == "resample" and downstream.score == 0.5 < culprit.score
    assert culprit.as_json()["best"] == "demos" and culprit.as_json()["flips"] == 3
    assert culprit.as_json()["samples"] == 11 and culprit.as_json()["calls"] == 11
    assert lib.NodeBlame("idle").score == 0.0 and lib.NodeBlame("idle").interval() == (0.0, 1.0)


def test_demos_from_good_runs_are_the_nodes_own_steps(tmp_path: Path) -> None:
    db, experiment_id = asyncio.run(batch(tmp_path, ZERO_SHOT))
    store = SQLiteStore(db)
    [failing] = lib.failing_of_experiment(store, experiment_id)
    plan = lib.run_plan(store, failing.record)
    assert cf.pool_demos(store, plan, "check", failing.good_runs) == [{"v": "d-two", "text": "k-two"}]
    assert cf.pool_demos(store, plan, "check", []) == []
    assert cf.pool_demos(store, plan, "check", failing.good_runs, {"v": "d-two"}) == []  # the same question
    store.close()
    (tmp_path / "own").mkdir()
    own_db, _ = asyncio.run(batch(tmp_path / "own", BAD_DEMO_FIRST))
    own_store = SQLiteStore(own_db)
    [own_failing] = lib.failing_of_experiment(own_store, _)
    own = lib.run_plan(own_store, own_failing.record)
    own_store.close()
    assert [[d["v"] for d in s] for s in cf.demo_sets(own, "check", [], 10)] == [
        ["d-two"],
        ["d-bad"],
        ["d-two", "d-bad"],
    ]


def _optimized(db: Path, experiment_id: str, out: Path) -> None:
    """Record an optimization of the flow as `flowstudio optimize` does: its chosen candidate
    rewrote `check`'s prompt, its flow written to `out`."""
    store = SQLiteStore(db)
    [failing] = lib.failing_of_experiment(store, experiment_id)
    text = Path(failing.record.flow_path or "").read_text(encoding="utf-8")
    out.write_text(text.replace('prompt: "Check: {{ v }}"', 'prompt: "Verify: {{ v }}"'), encoding="utf-8")
    assert load_flow(out).spec.nodes["check"].config["prompt"] == "Verify: {{ v }}"
    optimization = new_id()
    config = {"flow_hash": failing.record.flow_hash, "flow_out": str(out)}
    store.create_experiment(ExperimentRecord(optimization, "optimize", "three-kinds", config=config))
    rows = [
        {"candidate": "c0", "parent": None, "sets": {}},
        {"candidate": "c1", "parent": "c0", "sets": {"nodes.check.config.prompt": "Verify: {{ v }}"}},
    ]
    summary = {"status": "finished", "flow_out": str(out), "after": {"candidate": "c1"}, "candidates": rows}
    store.finish_experiment(optimization, summary)
    store.close()


async def test_only_the_optimizers_variant_fixes_the_culprit(tmp_path: Path) -> None:
    db, experiment_id = await batch(tmp_path, ZERO_SHOT)
    before = await blame_with(db, experiment_id, "resample", "variant")
    assert before.culprit is None  # no optimization stored: the kind is skipped
    assert all("variant" not in n.kinds for n in before.nodes)
    out = tmp_path / "flow.optimized.yaml"
    _optimized(db, experiment_id, out)
    blame = await blame_with(db, experiment_id, "resample", "variant")
    assert blame.culprit == "check"
    check = next(n for n in blame.nodes if n.node == "check")
    assert check.flipped_by == ["variant"] and check.kinds["variant"].samples == 1
    assert all("variant" not in n.kinds for n in blame.nodes if n.node != "check")  # nodes it left alone
    out.unlink()  # the --out file gone: the chosen candidate's edits are read back from the report
    store = SQLiteStore(db)
    [failing] = lib.failing_of_experiment(store, experiment_id)
    plan = lib.run_plan(store, failing.record)
    config = cf.variant_config(store, plan, "check", failing.record.flow_hash)
    assert config == {"form": "completion", "prompt": "Verify: {{ v }}"}
    assert cf.variant_config(store, plan, "check", "another flow") is None
    store.close()


def test_cli_reports_which_kind_flipped_the_answer(cli: CLI, tmp_path: Path) -> None:
    db, experiment_id = asyncio.run(batch(tmp_path, ZERO_SHOT))
    done = cli("blame", experiment_id, "--db", str(db), "--json")  # every kind by default
    assert done.code == 0, done.err
    [run] = done.json()["runs"].values()
    top = run["nodes"][0]
    assert run["culprit"] == "check" and top["flipped_by"] == ["demos"]
    assert top["kinds"]["demos"]["flips"] == 1 and top["kinds"]["resample"]["flips"] == 0
    assert top["calls"] == sum(k["calls"] for k in top["kinds"].values())
    store = SQLiteStore(db)
    [saved] = store.list_experiments(kind=lib.KIND)
    assert saved.config["counterfactuals"] == ["resample", "demos", "variant"]
    store.close()
    only = cli("blame", experiment_id, "--db", str(db), "--counterfactuals", "resample", "--json")
    assert only.code == 0 and next(iter(only.json()["runs"].values()))["culprit"] is None
    table = cli("blame", experiment_id, "--db", str(db), "--counterfactuals", "demos,resample")
    assert table.code == 0 and "flipped by" in table.out and "demos 1/1" in table.out
    bad = cli("blame", experiment_id, "--db", str(db), "--counterfactuals", "resample,guess")
    assert bad.code == 2 and "guess" in bad.err


def _trace_page() -> None:
    from studio.app.trace_page import render

    render()


def _experiments_page() -> None:
    from studio.app.experiments_page import render

    render()


def test_the_trace_viewer_says_which_kind_flipped_the_answer(
    cli: CLI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamlit.testing.v1 import AppTest

    db, experiment_id = asyncio.run(batch(tmp_path, ZERO_SHOT))
    done = cli("blame", experiment_id, "--db", str(db), "--counterfactuals", "resample,demos", "--json")
    assert done.code == 0, done.err
    [run_id] = done.json()["runs"]
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    trace = AppTest.from_function(_trace_page, default_timeout=30)
    trace.query_params["run"] = run_id
    trace.run()
    assert not trace.exception, trace.exception
    assert any(
        w.value.startswith("Likely culprit: `check`: its demos counterfactuals made the answer right in 1 of 1")
        for w in trace.warning
    )
    assert any("demos 1/1" in c.value for c in trace.caption)
    page = AppTest.from_function(_experiments_page, default_timeout=30)
    page.query_params["experiment"] = experiment_id
    page.run()
    assert not page.exception, page.exception
    table = next(t.value for t in page.dataframe if "culprit" in t.value.columns)
    [flipped] = list(table["flipped by"])
    assert list(table["culprit"]) == ["check"] and flipped.startswith("resample 0/") and "demos 1/1" in flipped
    assert list(table["blame"]) == ["1/1 demos"]
