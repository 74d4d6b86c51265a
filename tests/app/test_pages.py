"""Page logic through Streamlit's AppTest: runs list, traces, experiments, the Run page."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from studio.cli.launch import MAIN
from studio.store import SQLiteStore
from studio.store.base import RunRecord
from tests.app.seed import FLOWS, XSS

TIMEOUT = 30


def _runs_page() -> None:
    from studio.app.runs_page import render

    render()


def _trace_page() -> None:
    from studio.app.trace_page import render

    render()


def _experiments_page() -> None:
    from studio.app.experiments_page import render

    render()


def _run_page() -> None:
    from studio.app.run_page import render

    render()


def _page(script: object, **query: str) -> AppTest:
    app = AppTest.from_function(script, default_timeout=TIMEOUT)  # type: ignore[arg-type]
    for key, value in query.items():
        app.query_params[key] = value
    app.run()
    assert not app.exception, app.exception
    return app


def _table(app: AppTest, column: str) -> pd.DataFrame:
    """The first table that has `column` (AppTest does not expose keys of read-only tables)."""
    return next(t.value for t in app.dataframe if column in t.value.columns)


def test_the_app_opens_on_the_home_page(app_env: dict[str, str]) -> None:
    app = AppTest.from_file(str(MAIN), default_timeout=TIMEOUT).run()
    assert not app.exception and app.title[0].value == "Flowstudio"
    assert app.subheader[0].value.startswith("Flows in ")  # the folder's flows as cards


def test_runs_list_filters_by_flow_and_status(app_env: dict[str, str]) -> None:
    app = _page(_runs_page)
    table = _table(app, "run")
    assert len(table) == len(app_env) + 3  # the seeded runs plus the experiment's three
    assert set(app.selectbox(key="runs_flow").options) >= {"(any)", "chain", "failing", "nested"}
    app.selectbox(key="runs_status").select("failed").run()
    rows = _table(app, "run")
    assert set(rows["status"]) == {"failed"}
    assert f"traces?run={app_env['failing_a']}" in set(rows["run"])
    app.selectbox(key="runs_flow").select("failing").run()
    assert len(_table(app, "run")) == 2
    assert app.selectbox(key="runs_open").options[0].startswith(app_env["failing_b"])


COLUMNS = ["run_id", "flow", "flow_path", "flow_hash", "flow_text", "inputs", "status", "outputs", "error",
           "tokens", "cost_usd", "steps", "started_at", "ended_at", "parent_run_id", "experiment_id", "options"]  # fmt: skip
"""The columns the seeded rows fill; the others keep their defaults."""


def _row(record: RunRecord) -> list[object]:
    """A runs-table row in column order (a bulk insert in one transaction, faster than create_run)."""
    from studio.store.sqlite import _to_row

    row = _to_row(record)
    row["flow_text"] = None
    return [row[c] for c in COLUMNS]


def test_runs_list_is_paginated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "many.db"
    store = SQLiteStore(db)
    with store.transaction() as conn:
        for number in range(120):
            started = f"2026-02-01T00:{number // 60:02d}:{number % 60:02d}"
            record = RunRecord(run_id=f"r{number:03d}", flow="many", flow_path=None, flow_hash="h", inputs={}, started_at=started)  # fmt: skip
            conn.execute(
                f"INSERT INTO runs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})", _row(record)
            )
    store.close()
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    app = _page(_runs_page)
    assert "120 runs match" in app.caption[0].value
    first = _table(app, "run")
    assert len(first) == 50 and first["run"].iloc[0] == "traces?run=r119"
    page = next(n for n in app.number_input if n.label.startswith("Page"))
    assert page.max == 3
    page.set_value(3).run()
    last = _table(app, "run")
    assert len(last) == 20 and last["run"].iloc[-1] == "traces?run=r000"


def test_trace_of_a_failed_run_shows_the_failure_and_its_cause(app_env: dict[str, str]) -> None:
    app = _page(_trace_page, run=app_env["failing_a"])
    assert app.error[0].value == "Failing node: `answer` (auth)"
    texts = [c.value for c in app.code]
    assert any("auth" in t for t in texts)
    # an auth error is the failing node's own model settings, not its healthy upstream node (issue 20)
    assert any(m.value == "**Look first at:** the model settings of `answer`" for m in app.markdown)
    assert not any("Nearest upstream cause" in m.value for m in app.markdown)
    assert any("upstream nodes finished normally: `draft`" in c.value for c in app.caption)
    assert app.selectbox(key=f"node_{app_env['failing_a']}").value == "answer"
    assert any(t.startswith("ANSWER using draft about " + XSS) for t in texts)  # the rendered prompt, as text
    assert app.query_params["run"] == app_env["failing_a"]


def test_trace_shows_the_runs_inputs_and_outputs_first(app_env: dict[str, str]) -> None:
    app = _page(_trace_page, run=app_env["failing_a"])
    headings = [m.value for m in app.markdown]
    assert headings.index("**Inputs**") < headings.index("**Outputs**")
    assert "— (the run failed: see below)" in [c.value for c in app.caption]  # its missing outputs
    assert any(" UTC · run " in c.value and " · version " in c.value for c in app.caption)  # what it ran


def test_selecting_a_node_shows_its_inputs_outputs_and_call(app_env: dict[str, str]) -> None:
    app = _page(_trace_page, run=app_env["failing_a"])
    app.selectbox(key=f"node_{app_env['failing_a']}").select("draft").run()
    assert not app.exception
    assert app.query_params["node"] == "draft"
    assert any(m.value == "**`draft`**" for m in app.markdown)
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["tokens"] != "0" and metrics["attempts"] == "1"
    assert any(e.label.startswith("Call 1 · scripted") for e in app.expander)


def test_sub_flow_steps_can_be_picked_per_iteration(app_env: dict[str, str]) -> None:
    app = _page(_trace_page, run=app_env["nested"], node="refine")
    step = app.selectbox(key="step_refine")
    assert step.options == ["refine[0] → critique", "refine[1] → critique", "refine (the node itself)"]
    step.set_value("refine[1].critique").run()
    assert any(m.value == "**`refine[1].critique`**" for m in app.markdown)
    assert any("spec" in c.value for c in app.caption)  # the graph came from the spec


def test_cost_tab_totals_the_model_calls(app_env: dict[str, str]) -> None:
    app = _page(_trace_page, run=app_env["nested"], tab="Cost")
    total = next(m for m in app.metric if m.label == "total of model calls")
    assert total.value == "$0.063000"


def test_compare_tab_lists_what_differs(app_env: dict[str, str]) -> None:
    app = _page(_trace_page, run=app_env["chain_a"], tab="Compare")
    app.selectbox(key="compare_with").select(app_env["chain_b"]).run()
    rows = _table(app, "differs")
    assert list(rows["step"]) == ["ask", "write", "shout"]
    assert rows["differs"].iloc[0] == "inputs, outputs"


def test_unknown_run_id_says_so(app_env: dict[str, str]) -> None:
    app = _page(_trace_page, run="nope")
    assert "no run with this id" in app.error[0].value


def test_experiments_list_and_examples_with_links(app_env: dict[str, str]) -> None:
    app = _page(_experiments_page)
    assert list(_table(app, "experiment")["experiment"]) == ["exp1"]
    examples = _table(app, "score")
    # failures first: the failed run, then the wrong answer, then the right one
    assert list(examples["run"]) == [f"traces?run=exp1-r{n}" for n in (2, 1, 0)]
    assert list(examples["score"].fillna(-1)) == [-1, 0.0, 1.0]


def test_run_page_runs_a_flow_from_its_form(app_env: dict[str, str], seeded: tuple[Path, dict[str, str]]) -> None:
    app = _page(_run_page)
    assert app.selectbox(key="run_flow").options == ["chain.yaml", "failing.yaml", "mapped.yaml"]
    assert [t.label for t in app.text_area] == ["topic (str)", "tone (str)"]
    app.text_area[0].input("moon")
    app.button[0].click().run()
    assert not app.exception
    run_id = app.query_params["run"]
    store = SQLiteStore(seeded[0])
    try:
        record: RunRecord | None = store.get_run(run_id)
    finally:
        store.close()
    assert (
        record is not None and record.status == "succeeded" and record.inputs == {"topic": "moon", "tone": "cheerful"}
    )


def test_run_page_takes_json_for_list_inputs(app_env: dict[str, str], seeded: tuple[Path, dict[str, str]]) -> None:
    app = _page(_run_page)
    app.selectbox(key="run_flow").set_value(FLOWS / "mapped.yaml").run()
    (docs,) = app.text_area
    assert docs.label == "docs (list[str])"
    docs.input('["one two", "three"]')
    app.button[0].click().run()
    assert not app.exception
    store = SQLiteStore(seeded[0])
    try:
        record = store.get_run(app.query_params["run"])
    finally:
        store.close()
    assert record is not None and record.status == "succeeded" and record.inputs == {"docs": ["one two", "three"]}


def test_run_page_shows_bad_input_instead_of_running(app_env: dict[str, str]) -> None:
    app = _page(_run_page)
    app.selectbox(key="run_flow").set_value(FLOWS / "mapped.yaml").run()
    app.text_area[0].input('{"not": "a list"}')
    app.button[0].click().run()
    assert not app.exception and "run" not in app.query_params
    assert app.error[0].value == "The flow did not start."
    assert "docs" in app.code[0].value


def test_a_waiting_run_is_resumed_from_its_trace(app_env: dict[str, str], tmp_path: Path) -> None:
    from studio.runtime.runner import run_flow
    from tests.conftest import FIXTURES

    waiting = run_flow(FIXTURES / "approval.yaml", {"topic": "tea"})
    assert waiting.status == "waiting"
    app = _page(_trace_page, run=waiting.run_id)
    assert any("Publish this? A short draft." in t.value for t in app.text)
    assert "— (the run waits for input: see below)" in [c.value for c in app.caption]
    app.text_input(key="answer_approve").input("maybe")
    app.button[0].click().run()
    assert any(e.value.startswith("Answer for approve: must be bool") for e in app.error)
    app.text_input(key="answer_approve").input("true")
    app.button[0].click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    store = SQLiteStore(os.environ["FLOWSTUDIO_DB"])
    try:
        run = store.get_run(waiting.run_id)
        assert run is not None and run.status == "succeeded"
        assert run.outputs == {"published": "PUBLISHED: A short draft."}
    finally:
        store.close()
