"""The experiments page for an optimizer search: candidates, chart, diff, save as a new flow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest

from studio.app.optimize_panel import chart_rows, save_chosen
from studio.app.settings import DIR_ENV
from studio.cli import main
from tests.optimize.conftest import DEMO_RULES, MakeTask


def _experiments_page() -> None:
    from studio.app.experiments_page import render

    render()


def _save_button(app: AppTest) -> Any:
    """The save form's button (the page's start forms come first)."""
    return next(b for b in app.button if b.label == "Save as a new flow file")


def test_optimizer_experiment_page_and_saving_the_chosen_flow(
    make_task: MakeTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = make_task(DEMO_RULES)
    db = task.folder / "flowstudio.db"
    out = task.folder / "better.yaml"
    args = ["optimize", str(task.flow), "--train", str(task.train), "--dev", str(task.dev), "--metric", "exact"]
    done = CliRunner().invoke(
        main, [*args, "--budget-calls", "120", "--minibatch", "4", "--db", str(db), "--out", str(out)]
    )
    assert done.exit_code == 0, done.output
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    monkeypatch.setenv(DIR_ENV, str(task.folder))
    app = AppTest.from_function(_experiments_page, default_timeout=30).run()
    assert not app.exception, app.exception
    assert any("+" in c.value and "demos" in c.value for c in app.code), "the YAML diff shows the added demos"
    app.text_input(key="chosen_name").input("chosen.yaml")
    _save_button(app).click().run()
    assert (task.folder / "chosen.yaml").read_text() == out.read_text()
    app.text_input(key="chosen_name").input("chosen.yaml")
    _save_button(app).click().run()
    assert any("exists" in e.value for e in app.error)


def test_chart_uses_tokens_when_every_call_was_free(tmp_path: Path) -> None:
    summary = {
        "candidates": [
            {"candidate": "c0", "score": 0.2, "cost_per_example": 0.0, "tokens_per_example": 10.0},
            {"candidate": "c1", "score": 0.9, "cost_per_example": 0.0, "tokens_per_example": 30.0},
        ],
        "pareto": [{"candidate": "c0"}, {"candidate": "c1"}],
        "flow_out": str(tmp_path / "missing.yaml"),
    }
    points, axis = chart_rows(summary)
    assert axis == "tokens_per_example" and [p["front"] for p in points] == ["Pareto front"] * 2
    with pytest.raises(ValueError, match=r"ending in \.yaml"):
        save_chosen(summary, "../escape.txt", tmp_path)
