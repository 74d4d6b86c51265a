"""The experiments page for an optimizer search: candidates in full, the chart of fully scored
candidates with screened ones apart, cache hits priced, save as a new flow opened in the Editor."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest

from studio.app.optimize_panel import DOMINATED, FRONT, chart_rows, chart_spec, save_chosen, table_rows
from studio.app.settings import DIR_ENV
from studio.cli import main
from studio.flow.spec import load_flow
from studio.optimize import prepare
from studio.optimize.optimization import Optimization
from studio.store import SQLiteStore
from tests.optimize.conftest import DEMO_RULES, MakeTask, Task, options


def _experiments_page() -> None:
    from studio.app.experiments_page import render

    render()


def _studio() -> None:
    """The experiments page and the Editor, navigable as in the app."""
    import streamlit as st

    from studio.app.links import EDITOR, EXPERIMENTS
    from studio.app.main import registered

    st.navigation(registered(EXPERIMENTS, EDITOR)).run()


def _save_button(app: AppTest) -> Any:
    """The save form's button (the page's start forms come first)."""
    return next(b for b in app.button if b.label == "Save as a new flow file")


def _optimized(task: Task) -> tuple[Path, Path]:
    """The CLI's search on the task into a store in its folder: (database, optimized flow)."""
    db, out = task.folder / "flowstudio.db", task.folder / "better.yaml"
    args = ["optimize", str(task.flow), "--train", str(task.train), "--dev", str(task.dev), "--metric", "exact"]
    done = CliRunner().invoke(
        main, [*args, "--budget-calls", "120", "--minibatch", "4", "--db", str(db), "--out", str(out)]
    )
    assert done.exit_code == 0, done.output
    return db, out


def _changed_lines(before: str, after: str) -> list[str]:
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_optimizer_experiment_page_and_saving_the_chosen_flow(
    make_task: MakeTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = make_task(DEMO_RULES)
    with task.dev.open("a", encoding="utf-8") as dev:  # two train examples in dev too: left out of train
        dev.write("".join(task.train.read_text(encoding="utf-8").splitlines(keepends=True)[:2]))
    db, out = _optimized(task)
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    monkeypatch.setenv(DIR_ENV, str(task.folder))
    app = AppTest.from_function(_experiments_page, default_timeout=30).run()
    assert not app.exception, app.exception
    assert [c.value for c in app.caption if c.value.startswith("Note: 2 train examples also in the dev set")]
    assert any("+" in c.value and "demos" in c.value for c in app.code), "the YAML diff shows the added demos"
    app.text_input(key="chosen_name").input("chosen.yaml")
    _save_button(app).click().run()
    saved = task.folder / "chosen.yaml"
    # the copy is the chosen flow under a new name: only its `name:` line differs
    assert _changed_lines(out.read_text(), saved.read_text()) == ["-name: opt-task", "+name: chosen"]
    assert load_flow(saved).spec.name == "chosen"
    app = AppTest.from_function(_experiments_page, default_timeout=30).run()
    app.text_input(key="chosen_name").input("chosen.yaml")
    _save_button(app).click().run()
    assert any("exists" in e.value for e in app.error)


def test_saving_opens_the_new_flow_in_the_editor(make_task: MakeTask, monkeypatch: pytest.MonkeyPatch) -> None:
    task = make_task(DEMO_RULES)
    db, _ = _optimized(task)
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    monkeypatch.setenv(DIR_ENV, str(task.folder))
    app = AppTest.from_function(_studio, default_timeout=30).run()
    assert not app.exception, app.exception
    assert app.title[0].value == "Experiments"
    assert app.text_input(key="chosen_name").value == "opt-task-optimized"  # a free name by default
    _save_button(app).click().run()
    assert not app.exception, app.exception
    saved = task.folder / "opt-task-optimized.yaml"
    assert load_flow(saved).spec.name == "opt-task-optimized"
    assert not [t.value for t in app.title if t.value == "Experiments"], "the page switched"
    assert app.selectbox(key="editor_flow").value == saved, "the Editor opened the new file"


def test_candidate_table_and_details_show_every_change_in_full(
    make_task: MakeTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = make_task(DEMO_RULES)
    db, _ = _optimized(task)
    store = SQLiteStore(db)
    record = store.list_experiments(kind="optimize")[0]
    summary = record.summary or {}
    chosen = summary["after"]["candidate"]
    after = next(r for r in summary["candidates"] if r["candidate"] == chosen)
    assert set(after["sets"]) == {"nodes.answer.config.demos"} and len(after["sets"]["nodes.answer.config.demos"]) == 2
    # a proposer's instructions are long: the table, the details and the edit keep every word
    said = "Label the review as positive or negative, reading it to the end; " * 8
    last = summary["candidates"][-1]
    last["move"] = "answer: proposed #1 " + "(a long description) " * 10
    last["changes"] = [*last["changes"][:-1], last["move"]]
    last["sets"] = {"nodes.answer.config.instructions": said}
    store.finish_experiment(record.experiment_id, summary)
    store.close()
    rows = table_rows(summary)
    assert rows[-1]["change"] == last["move"], "the table carries the whole text, not a cut"
    assert list(rows[-1])[:3] == ["candidate", "chosen", "change"], "what changed is read before the figures"
    assert [r["candidate"] for r in rows if r["chosen"]] == [chosen]
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    monkeypatch.setenv(DIR_ENV, str(task.folder))
    app = AppTest.from_function(_experiments_page, default_timeout=30).run()
    assert not app.exception, app.exception
    assert app.selectbox(key="candidate_pick").value == chosen, "the chosen candidate's details first"
    assert any(c.value == "\n".join(after["changes"]) for c in app.code), "its changes in full, wrapped"
    app.selectbox(key="candidate_pick").select(last["candidate"]).run()
    codes = [c.value for c in app.code]
    assert any(last["move"] in c for c in codes) and any(said.strip() in c for c in codes)
    shown = {m.label: m.value for m in app.metric}
    assert shown["dev examples"] == f"{last['examples']} of {summary['dev_examples']}"
    assert shown["tokens / example"] == f"{last['tokens_per_example']:.1f}"


def test_chart_fronts_fully_scored_candidates_and_draws_screened_ones_apart(tmp_path: Path) -> None:
    def row(candidate: str, examples: int, score: float, tokens: float) -> dict[str, Any]:
        return {"candidate": candidate, "examples": examples, "score": score, "cost_per_example": 0.0,
                "tokens_per_example": tokens, "move": candidate, "changes": []}  # fmt: skip

    summary = {
        "dev_examples": 16,
        "candidates": [
            row("c0", 16, 0.25, 10.0),
            row("c1", 16, 0.75, 30.0),
            row("c2", 16, 0.5, 40.0),  # worse and dearer than c1
            row("c3", 4, 1.0, 8.0),  # above the front, but on 4 examples
            row("c4", 8, 0.875, 20.0),
            row("c5", 4, 0.0, 50.0),
        ],
        "after": {"candidate": "c1"},
    }
    points, axis = chart_rows(summary)
    series = {p["candidate"]: p["front"] for p in points}
    assert axis == "tokens_per_example"
    assert series == {
        "c0": FRONT,
        "c1": FRONT,
        "c2": DOMINATED,
        "c3": "screened on 4 of 16 examples",
        "c4": "screened on 8 of 16 examples",
        "c5": "screened on 4 of 16 examples",
    }
    spec = chart_spec(points, axis, 16)
    legend = spec["layer"][1]["encoding"]["color"]["scale"]["domain"]
    assert legend == [FRONT, DOMINATED, "screened on 4 of 16 examples", "screened on 8 of 16 examples"]
    assert spec["layer"][0]["transform"] == [{"filter": {"field": "front", "equal": FRONT}}], "the line: front only"


async def test_chart_of_a_real_search_marks_nothing_above_the_front_dominated(make_task: MakeTask) -> None:
    task = make_task(DEMO_RULES)
    report = (await Optimization(prepare(options(task)), SQLiteStore(task.folder / "s.db")).run()).report
    size = report["dev_examples"]
    assert size == 16
    points, x = chart_rows(report)
    by_id = {r["candidate"]: r for r in report["candidates"]}
    screened = [p for p in points if by_id[p["candidate"]]["examples"] < size]
    assert screened, "successive halving dropped some candidates after a few examples"
    for point in screened:
        assert point["front"] == f"screened on {by_id[point['candidate']]['examples']} of {size} examples"
    front = [p for p in points if p["front"] == FRONT]
    assert {p["candidate"] for p in front} >= {p["candidate"] for p in report["pareto"]}
    for point in points:
        if point["front"] == DOMINATED:
            better = [f for f in front if f["score"] >= point["score"] and f[x] <= point[x]]
            assert better, f"{point['candidate']} is marked dominated with no front point beating it"


async def test_candidates_served_from_the_cache_cost_what_their_calls_cost(make_task: MakeTask) -> None:
    task = make_task(DEMO_RULES)
    priced = "    model: scripted\n    input_cost_per_token: 0.001\n    output_cost_per_token: 0.002\n"
    task.flow.write_text(task.flow.read_text().replace("    model: scripted\n", priced, 1))
    store = SQLiteStore(task.folder / "flowstudio.db")
    try:
        # a budget the search does not exhaust, so the replay makes the same moves (cache hits are free)
        first = (await Optimization(prepare(options(task, 400)), store).run()).report
        again = (await Optimization(prepare(options(task, 400)), store).run()).report  # every call a cache hit
    finally:
        store.close()
    assert first["calls"] > 0 and first["cost_usd"] > 0
    assert (again["calls"], again["tokens"], again["cost_usd"]) == (0, 0, 0.0), "spent: nothing"
    made = {r["candidate"]: r for r in first["candidates"]}
    assert [r["candidate"] for r in again["candidates"]] == list(made)
    for row in again["candidates"]:
        assert row["cost_per_example"] > 0 and row["tokens_per_example"] > 0, row["candidate"]
        assert row["cost_per_example"] == made[row["candidate"]]["cost_per_example"]
        assert row["tokens_per_example"] == made[row["candidate"]]["tokens_per_example"]
    assert again["pareto"] == first["pareto"]
    points, x = chart_rows(again)
    assert x == "cost_per_example" and all(p[x] > 0 for p in points)


def test_save_as_renames_the_flow_and_refuses_bad_names_and_overwrites(tmp_path: Path) -> None:
    source = tmp_path / "out" / "best.yaml"
    source.parent.mkdir()
    flow = "flowstudio: 1\nname: opt-task   # the flow's name\ninputs: {text: {type: str}}\noutputs: {}\nnodes: {}\n"
    source.write_text(flow)
    original = tmp_path / "out" / "task.yaml"
    (tmp_path / "out" / "task.layout.yaml").write_text("nodes: {}\n")  # the input flow's canvas layout
    summary = {"flow_out": str(source), "flow": str(original)}
    saved = save_chosen(summary, "better-one", tmp_path)
    assert (tmp_path / "better-one.layout.yaml").read_text() == "nodes: {}\n"
    assert saved == tmp_path / "better-one.yaml"
    assert load_flow(saved).spec.name == "better-one"
    assert "# the flow's name" in saved.read_text(), "comments survive the rename"
    with pytest.raises(ValueError, match="exists"):
        save_chosen(summary, "better-one.yaml", tmp_path)
    assert load_flow(saved).spec.name == "better-one"
    for bad in ("../escape.txt", "Better One", "sub/flow.yaml", ".hidden.yaml"):
        with pytest.raises(ValueError, match=r"ending in \.yaml"):
            save_chosen(summary, bad, tmp_path)
    source.write_text("flowstudio: 1\nname: opt-task\nnodes: [not, a, mapping]\n")
    with pytest.raises(ValueError, match="does not load"):
        save_chosen(summary, "broken", tmp_path)
    assert not (tmp_path / "broken.yaml").exists(), "a copy that does not load is removed"


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
