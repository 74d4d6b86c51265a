"""Comparing two batches on the Experiments page: two real batches of one flow on the scripted
model, a real store, the choice kept in the URL."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from studio.app.batch_compare_panel import candidates, label
from studio.app.settings import DIR_ENV
from studio.evaluate.batch import BatchOptions, batch
from studio.store import SQLiteStore
from studio.store.base import ExperimentRecord
from tests.app.launch_seed import QA, QA_DATA

TIMEOUT = 30
BETTER_SCRIPT = """\
      - {match: "2 \\\\+ 2", reply: " 5 "}
      - {match: "capital of France", reply: "Paris."}
      - {match: "crash", reply: "x"}
      - {reply: "Shakespeare"}
"""
"""B's model: wrong on 2 + 2 (a loss), the same on France (a tie), right on the two A misses (wins)."""


def _experiments_page() -> None:
    from studio.app.experiments_page import render

    render()


def _seed(folder: Path) -> tuple[str, str]:
    """Batch A on tests/flows/qa.yaml, then batch B on the same flow with a better script."""
    text = QA.read_text(encoding="utf-8")
    start, end = text.index("    script:\n") + len("    script:\n"), text.index("    input_cost_per_token")
    (folder / "qa.yaml").write_text(text, encoding="utf-8")
    (folder / "qa_b.yaml").write_text(text[:start] + BETTER_SCRIPT + text[end:], encoding="utf-8")
    store = SQLiteStore(folder / "flowstudio.db")
    try:
        ids = []
        for flow in ("qa.yaml", "qa_b.yaml"):
            options = BatchOptions(str(folder / flow), str(QA_DATA), metric="contains", cache=False, concurrency=1)
            ids.append(asyncio.run(batch(options, store)).summary.experiment_id)
    finally:
        store.close()
    return ids[0], ids[1]


def _page(**query: str) -> AppTest:
    app = AppTest.from_function(_experiments_page, default_timeout=TIMEOUT)
    for key, value in query.items():
        app.query_params[key] = value
    app.run()
    assert not app.exception, app.exception
    return app


def test_two_batches_compare_example_by_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _seed(tmp_path)
    monkeypatch.setenv("FLOWSTUDIO_DB", str(tmp_path / "flowstudio.db"))
    monkeypatch.setenv(DIR_ENV, str(tmp_path))
    app = _page(experiment=b)
    compare = app.selectbox(key=f"compare_with_{b}")
    assert compare.options[0] == "—" and compare.options[1].startswith(f"{a} · qa · ")
    assert "other dataset" not in compare.options[1]
    assert not any("B against A" in m.value for m in app.markdown)
    compare.set_value(a).run()
    assert not app.exception, app.exception
    assert app.query_params["compare"] == a
    _check(app)
    reloaded = _page(experiment=b, compare=a)  # a reload: the URL alone brings the comparison back
    assert reloaded.selectbox(key=f"compare_with_{b}").value == a
    _check(reloaded)
    reloaded.selectbox(key=f"compare_with_{b}").set_value("").run()
    assert "compare" not in reloaded.query_params
    assert not any("B against A" in m.value for m in reloaded.markdown)


def _check(app: AppTest) -> None:
    (line,) = [m.value for m in app.markdown if "B against A" in m.value]
    assert line.startswith("**B against A: 2 wins, 1 loss, 1 tie · mean Δ +0.250 (95% CI ")
    assert line.endswith("sign test p = 1**")
    assert any(c.value.startswith("No significant difference at 5%: only 3 examples differ") for c in app.caption)
    table = next(t.value for t in app.dataframe if "outcome" in t.value.columns)
    rows = [tuple(r) for r in table[["example", "expected", "A got", "B got", "score A", "score B", "outcome"]].values]
    assert rows[1][2].startswith("failed: node 'answer' failed: model call failed")  # A's error, cut short
    rows[1] = (*rows[1][:2], "failed", *rows[1][3:])
    assert rows == [
        ("What is 2 + 2?", "4", "4", "5", 1.0, 0.0, "loss"),
        ("Please crash now", "x", "failed", "x", 0.0, 1.0, "win"),
        ("Who wrote Hamlet?", "Shakespeare", "I do not know", "Shakespeare", 0.0, 1.0, "win"),
        ("What is the capital of France?", "paris", "Paris.", "Paris.", 1.0, 1.0, "tie"),
    ]
    assert all(link.startswith("traces?run=") for link in [*table["run A"], *table["run B"]])


def test_the_choice_lists_the_same_flow_first_and_marks_other_data() -> None:
    def record(experiment_id: str, flow: str, data: str, kind: str = "batch") -> ExperimentRecord:
        return ExperimentRecord(
            experiment_id, kind, flow, config={"data_sha256": data}, created_at="2026-12-01T10:00:00"
        )

    page = record("b", "qa", "d1")
    listed = [
        record("x", "other", "d1"),
        page,
        record("s", "qa", "d1", "optimize"),
        record("a", "qa", "d2"),
        record("c", "qa", "d1"),
    ]
    chosen = candidates(page, listed)
    assert [e.experiment_id for e in chosen] == ["a", "c", "x"]
    assert [label(page, e) for e in chosen] == [
        "a · qa · 2026-12-01 10:00 · other dataset",
        "c · qa · 2026-12-01 10:00",
        "x · other · 2026-12-01 10:00 · other flow",
    ]


def test_a_blame_shows_its_culprits_with_their_meaning_and_no_batch_cards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A selected blame read "Score —, 0 of 0 examples" (a batch's cards, for an experiment with no examples)."""
    store = SQLiteStore(tmp_path / "flowstudio.db")
    node = {"node": "answer", "flips": 2, "samples": 3, "calls": 3, "low": 0.2, "high": 0.9, "best": None}
    run = {"example": "e1", "run_id": "r1", "culprit": "answer", "nodes": [node], "calls": 3}
    try:
        store.create_experiment(ExperimentRecord("blame1", "blame", "qa", config={"target": "batch0"}))
        store.finish_experiment("blame1", {"runs": {"r1": run}, "failing": 1})
    finally:
        store.close()
    monkeypatch.setenv("FLOWSTUDIO_DB", str(tmp_path / "flowstudio.db"))
    monkeypatch.setenv(DIR_ENV, str(tmp_path))
    app = _page(experiment="blame1")
    metrics = {m.label: m.value for m in app.metric}  # what a blame has, not Score nor "0 of 0 examples"
    assert metrics == {
        "Failing examples blamed": "1 of 1", "Culprits named": "1 of 1", "Most often to blame": "none",
        "Model calls": "0",
    }  # fmt: skip
    assert any("culprits of the wrong answers of batch [`batch0`]" in m.value for m in app.markdown)
    assert not [m for m in app.markdown if m.value.startswith("**Examples**")]
    table = next(t for t in app.dataframe if "culprit" in t.value.columns)
    assert table.value["blame"].iloc[0] == "2/3"
    assert any(c.value.startswith("**blame**: of the re-runs") for c in app.caption)  # what the numbers mean


def test_a_blame_its_budget_cut_short_offers_the_budget_that_reaches_every_failing_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from studio.app import launches

    store = SQLiteStore(tmp_path / "flowstudio.db")
    node = {"node": "answer", "flips": 1, "samples": 4, "calls": 4, "low": 0.05, "high": 0.7, "best": None}
    run = {"example": 0, "run_id": "r1", "culprit": "answer", "nodes": [node], "calls": 10}
    summary = {"runs": {"r1": run}, "failing": 1, "failing_found": 4, "calls": 10, "budget_calls": 10}
    try:
        store.create_experiment(ExperimentRecord("blame2", "blame", "qa", config={"target": "batch0"}))
        store.finish_experiment("blame2", summary | {"culprits": {"answer": 1}})
    finally:
        store.close()
    monkeypatch.setenv("FLOWSTUDIO_DB", str(tmp_path / "flowstudio.db"))
    monkeypatch.setenv(DIR_ENV, str(tmp_path))
    started: list[list[str]] = []
    monkeypatch.setattr(launches, "start", lambda db, kind, flow, args, cwd=None: started.append([kind, flow, *args]))
    app = _page(experiment="blame2")
    (warning,) = [w.value for w in app.warning]
    assert warning.startswith("The budget of 10 model calls reached 1 of the 4 failing examples")
    assert "needs about **40 calls**" in warning and "--budget-calls" not in warning
    assert {m.label: m.value for m in app.metric}["Failing examples blamed"] == "1 of 4"
    app.button(key="blame_more_budget").click().run()
    assert started == [["blame", "batch0", "--budget-calls", "40"]]
