"""The trace page tells the truth: free runs in tokens, causes matched to the error kind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest

from studio.cli import main
from studio.store.memory import MemoryStore
from studio.viewer.failure import blame, find_failure
from tests.app.launch_seed import QA
from tests.app.seed import two_inputs_run


def _trace_page() -> None:
    from studio.app.trace_page import render

    render()


def _free_run(tmp_path: Path, question: str) -> tuple[Path, str]:
    """qa.yaml without prices, run once from the CLI: every call is free."""
    flow = tmp_path / "free.yaml"
    lines = QA.read_text(encoding="utf-8").splitlines()
    flow.write_text("\n".join(line for line in lines if "cost_per_token" not in line) + "\n", encoding="utf-8")
    db = tmp_path / "s.db"
    done = CliRunner().invoke(main, ["run", str(flow), "-i", f"question={question}", "--json", "--db", str(db)])
    assert done.output, done.output
    return db, json.loads(done.output[done.output.index("{") :])["run_id"]


def test_a_free_run_shows_tokens_not_zero_dollars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db, run_id = _free_run(tmp_path, "What is 2 + 2?")
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    app = AppTest.from_function(_trace_page, default_timeout=30)
    app.query_params["run"] = run_id
    app.run()
    assert not app.exception, app.exception
    assert "tokens of model calls" not in {m.label for m in app.metric}  # the Cost tab is drawn when opened
    app.query_params["tab"] = "Cost"
    app.run()
    metrics = {m.label: m.value for m in app.metric}
    assert "total of model calls" not in metrics
    assert int(metrics["tokens of model calls"]) > 0
    assert metrics["cost"] == "free"
    shown = [json.loads(j.value) for j in app.json]
    assert shown[:2] == [{"question": "What is 2 + 2?"}, {"answer": "4"}]  # the run's own inputs and outputs first
    charts = [json.loads(c.proto.spec) for c in app.get("vega_lite_chart")]
    bars = [c for c in charts if c.get("mark", {}).get("type") == "bar" and c["encoding"]["x"]["field"] == "tokens"]
    assert [b["encoding"]["y"]["field"] for b in bars] == ["node", "model"]  # counted in tokens, biggest first
    assert all(b["encoding"]["y"]["sort"] == "-x" for b in bars)


def test_the_cost_bars_draw_without_altair(tmp_path: Path) -> None:
    """`st.bar_chart` imports and validates through Altair: most of a second on a page's first visit."""
    db, run_id = _free_run(tmp_path, "What is 2 + 2?")
    script = (
        "import sys; from studio.store import SQLiteStore; from studio.viewer import load_trace\n"
        "from studio.app.trace_parts import cost_panel\n"
        f"cost_panel(load_trace(SQLiteStore({str(db)!r}), {run_id!r}))\n"
        "print('altair' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False", done.stdout + done.stderr


def test_an_auth_error_blames_the_nodes_model_settings(tmp_path: Path) -> None:
    db, run_id = _free_run(tmp_path, "Please crash now")
    from studio.store import SQLiteStore
    from studio.viewer import load_trace

    store = SQLiteStore(db)
    try:
        trace = load_trace(store, run_id)
    finally:
        store.close()
    assert trace is not None
    failure = find_failure(trace)
    assert failure is not None and failure.kind == "auth"
    found = blame(trace, failure)
    assert found is not None and (found.where, found.node) == ("settings", "answer")
    assert "scripted" in found.text


def test_a_bad_input_blames_the_upstream_node_that_produced_it() -> None:
    trace = two_inputs_run(MemoryStore(), "input left: Input should be a valid string", "bad_input")
    failure = find_failure(trace)
    assert failure is not None
    found = blame(trace, failure)
    assert found is not None and (found.where, found.node) == ("upstream", "a")
    assert "left" in found.text
