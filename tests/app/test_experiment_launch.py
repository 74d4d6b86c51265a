"""Starting, following and stopping batches from the studio: real processes, a real store."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from studio.app import launches
from studio.app.settings import DIR_ENV
from studio.evaluate.live import LAUNCH_ENV, LiveSummary
from studio.store import SQLiteStore
from studio.store.base import ExperimentRecord, RunFilter
from studio.viewer.results import cards
from tests.app.launch_seed import slow_folder, wait_for
from tests.optimize.conftest import DEMO_RULES, MakeTask

TIMEOUT = 30


def _experiments_page() -> None:
    from studio.app.experiments_page import render

    render()


def _record(store: SQLiteStore, summary: dict[str, object] | None) -> ExperimentRecord:
    store.create_experiment(ExperimentRecord("e1", "batch", "qa"))
    if summary is not None:
        store.finish_experiment("e1", summary)
    found = store.get_experiment("e1")
    assert found is not None
    return found


def _wait_gone(pid: int, timeout_s: float = 5) -> None:
    deadline = time.monotonic() + timeout_s
    while launches.alive(pid):
        assert time.monotonic() < deadline, f"process {pid} is still alive"
        time.sleep(0.05)


def test_live_summary_records_progress_and_never_overwrites_the_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LAUNCH_ENV, "token1")
    store = SQLiteStore(tmp_path / "s.db")
    _record(store, None)
    live = LiveSummary(store, "e1", every_s=60)
    live.update(force=True, done=1, total=4, score=1.0)
    live.update(done=2, total=4)  # too soon after the last write: skipped
    summary = store.get_experiment("e1").summary  # type: ignore[union-attr]
    assert summary is not None
    assert (summary["status"], summary["pid"], summary["done"], summary["total"]) == ("running", os.getpid(), 1, 4)
    assert summary["eta_s"] >= 0 and summary["launch"] == "token1"
    store.finish_experiment("e1", {"status": "finished", "score": 0.5})
    live.update(force=True, done=4, total=4)
    assert store.get_experiment("e1").summary == {"status": "finished", "score": 0.5}  # type: ignore[union-attr]
    store.close()


def test_state_follows_the_summary_and_the_process(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        experiment = _record(store, {"status": "running", "pid": sleeper.pid})
        assert launches.state(experiment) == "running"
        sleeper.kill()
        sleeper.wait()
        assert launches.state(experiment) == "failed"  # running in the store, but its process is gone
    finally:
        sleeper.kill()
    for status, expected in (("finished", "finished"), ("stopped", "stopped"), ("interrupted", "stopped")):
        experiment.summary = {"status": status}
        assert launches.state(experiment) == expected
    experiment.summary = {"mean": 0.5}  # a summary without status: an older finished batch
    assert launches.state(experiment) == "finished"
    experiment.summary = None
    assert launches.state(experiment) == "unfinished"  # a terminal batch: no summary, no launch
    launch = launches.Launch(token="t", kind="batch", flow="qa.yaml", pid=sleeper.pid)
    assert launches.state(experiment, launch) == "failed"  # started by the studio, gone without a summary
    store.close()


def test_a_started_batch_reports_progress_and_can_be_stopped(tmp_path: Path) -> None:
    folder = slow_folder(tmp_path, delay_s=0.5, copies=5)
    db = tmp_path / "s.db"
    launch = launches.start(
        db, "batch", str(folder / "qa.yaml"), ["--data", "data/qa.jsonl", "--concurrency", "1"], cwd=folder
    )
    running = wait_for(db, lambda e: (e.summary or {}).get("done", 0) >= 1)
    assert running.summary is not None and running.summary["launch"] == launch.token
    assert running.summary["total"] == 20
    assert launches.state(running, launch) == "running"
    store = SQLiteStore(db)
    try:
        launches.cancel(store, running, launch)
        stopped = store.get_experiment(running.experiment_id)
    finally:
        store.close()
    assert stopped is not None and launches.state(stopped, launch) == "stopped"
    _wait_gone(launch.pid)
    summary = stopped.summary or {}
    store = SQLiteStore(db)
    try:
        runs = store.query_runs(RunFilter(experiment_id=stopped.experiment_id))
    finally:
        store.close()
    finished = [r for r in runs if r.status in ("succeeded", "failed")]
    assert 1 <= summary["done"] < 20 and summary["done"] == len(finished)  # what finished, not the last write
    in_flight = [r for r in runs if r.status not in ("succeeded", "failed")]  # the run the stop interrupted
    assert len(in_flight) <= 1 and all(r.status == "cancelled" and r.error == launches.STOPPED_ERROR for r in in_flight)
    assert cards(stopped, runs)[1] == ("Errors", "0", f"of {len(finished)} examples")
    scored = summary["scores"]  # each finished example keeps its score, for the table and the card's CI
    assert set(scored) <= {r.run_id for r in finished} and len(scored) >= 1
    assert summary["score_ci"][0] <= summary["score"] <= summary["score_ci"][1]


def test_a_launch_that_fails_before_its_experiment_shows_its_error(tmp_path: Path) -> None:
    folder = slow_folder(tmp_path)
    db = tmp_path / "s.db"
    launch = launches.start(db, "batch", str(folder / "qa.yaml"), ["--data", "missing.jsonl"], cwd=folder)
    _wait_gone(launch.pid, timeout_s=30)
    assert launches.pending(db, []) == [(launch, "failed")]
    assert "dataset file not found" in launches.log_tail(launch)


def test_the_forms_open_on_a_flow_and_datasets_that_fit_each_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not the first flow and file by name: `ask.yaml` comes first, but only `qa.yaml` has data
    with a column for each of its inputs; the search's splits go by their file names."""
    folder = slow_folder(tmp_path, delay_s=0.0, copies=1)
    (folder / "ask.yaml").write_text((folder / "qa.yaml").read_text().replace("question", "query"), encoding="utf-8")
    rows = (folder / "data" / "qa.jsonl").read_text(encoding="utf-8")
    for split in ("test", "dev", "train"):
        (folder / "data" / f"qa-{split}.jsonl").write_text(rows, encoding="utf-8")
    (folder / "data" / "notes.jsonl").write_text('{"text": "unrelated"}\n', encoding="utf-8")
    monkeypatch.setenv("FLOWSTUDIO_DB", str(tmp_path / "s.db"))
    monkeypatch.setenv(DIR_ENV, str(folder))
    app = AppTest.from_function(_experiments_page, default_timeout=TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    assert app.selectbox(key="batch_flow").options == ["ask.yaml", "qa.yaml"]
    data = folder / "data"
    opened = {key: app.selectbox(key=key).value for key in ("batch_flow", "batch_data", "search_flow")}
    qa = folder / "qa.yaml"
    assert opened == {"batch_flow": qa, "batch_data": str(data / "qa-dev.jsonl"), "search_flow": qa}
    splits = {split: app.selectbox(key=f"search_{split}").value for split in ("train", "dev", "test")}
    assert splits == {split: str(data / f"qa-{split}.jsonl") for split in ("train", "dev", "test")}
    assert app.selectbox(key="batch_map_question").value == "question"
    assert not [c for c in app.caption if "the same file" in c.value]
    app.selectbox(key="search_dev").set_value(str(data / "qa-train.jsonl")).run()
    assert [c for c in app.caption if c.value.startswith("Train and dev are the same file: the search splits it")]


def test_the_page_starts_a_batch_and_shows_its_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = slow_folder(tmp_path, delay_s=0.0, copies=1)
    db = tmp_path / "s.db"
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    monkeypatch.setenv(DIR_ENV, str(folder))
    app = AppTest.from_function(_experiments_page, default_timeout=TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    assert app.selectbox(key="batch_flow").options == ["qa.yaml"]
    assert app.selectbox(key="batch_data").value == str(folder / "data" / "qa.jsonl")
    assert app.selectbox(key="batch_map_question").value == "question"
    assert app.selectbox(key="batch_expect_answer").value == "answer"
    app.selectbox(key="batch_metric").set_value("contains")
    app.number_input(key="batch_concurrency").set_value(2)
    app.button(key="start_batch").click().run()
    assert not app.exception, app.exception
    (launch,) = launches.launches(db)
    assert launch.argv[3:] == ["batch", str(folder / "qa.yaml"), "--data", str(folder / "data" / "qa.jsonl"),
                               "--map", "question=question", "--expect", "answer=answer", "--metric", "contains",
                               "--concurrency", "2", "--json", "--db", str(db)]  # fmt: skip
    finished = wait_for(db, lambda e: (e.summary or {}).get("status") == "finished")
    app.run()
    assert not app.exception, app.exception
    assert any("finished" in m.value for m in app.markdown)
    listed = next(t.value for t in app.dataframe if "state" in t.value.columns)
    assert list(listed["state"]) == ["finished"]
    assert listed["summary"].iloc[0].startswith(f"score {finished.summary['score']:.3f} · 1 errors of 4")  # type: ignore[index]
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Score"] == f"{finished.summary['score']:.3f}"  # type: ignore[index]
    assert metrics["Errors"] == "1"
    assert metrics["Cost"].startswith("$")
    table = next(t.value for t in app.dataframe if "expected" in t.value.columns)
    first = table.iloc[0]
    assert (first["status"], first["expected"], first["got"]) == ("failed", "x", "—")  # failures first
    row = table[table["expected"] == "paris"].iloc[0]
    assert (row["got"], row["score"]) == ("Paris.", 1.0)
    assert all(link.startswith("traces?run=") for link in table["run"])
    wrong = sum(1 for score in finished.summary["scores"].values() if score < 1)  # type: ignore[index]
    (hint,) = [i.value for i in app.info if "flowstudio blame" in i.value]  # no blame yet: the offer
    assert hint.startswith(f"{wrong} example") and f"`flowstudio blame {finished.experiment_id} --db {db}`" in hint
    app.button(key="start_blame").click().run()
    assert not app.exception, app.exception
    assert not [b for b in app.button if b.key == "start_blame"], "no second start while it runs (or once done)"
    blaming = next(launch for launch in launches.launches(db) if launch.kind == "blame")
    assert blaming.argv[3:] == ["blame", finished.experiment_id, "--json", "--db", str(db)]
    blamed = wait_for(
        db, lambda e: e.kind == "blame" and e.summary is not None and e.summary.get("status") != "running"
    )
    assert (blamed.config["target"], blamed.summary["launch"]) == (finished.experiment_id, blaming.token)  # type: ignore[index]
    app.run()
    assert not app.exception, app.exception
    assert not [i for i in app.info if "flowstudio blame" in i.value], "blamed: no offer"
    culprits = next(t.value for t in app.dataframe if "culprit" in t.value.columns)
    assert len(culprits) == blamed.summary["failing"] > 0  # type: ignore[index]


def test_the_page_starts_a_search_that_reports_its_budget(make_task: MakeTask, monkeypatch: pytest.MonkeyPatch) -> None:
    task = make_task(DEMO_RULES)
    db = task.folder / "flowstudio.db"
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    monkeypatch.setenv(DIR_ENV, str(task.folder))
    app = AppTest.from_function(_experiments_page, default_timeout=TIMEOUT)
    app.run()
    app.selectbox(key="search_train").set_value(str(task.train))
    app.selectbox(key="search_dev").set_value(str(task.dev))
    assert app.selectbox(key="search_test").value == str(task.folder / "test.jsonl")  # found by its name
    app.selectbox(key="search_test").set_value("(none)")
    app.selectbox(key="search_metric").set_value("exact")
    app.number_input(key="search_calls").set_value(120)
    app.button(key="start_search").click().run()
    assert not app.exception, app.exception
    (launch,) = launches.launches(db)
    argv = launch.argv[3:]
    assert argv[:2] == ["optimize", str(task.flow)]
    assert argv[argv.index("--train") + 1] == str(task.train) and argv[argv.index("--dev") + 1] == str(task.dev)
    assert argv[argv.index("--budget-calls") + 1] == "120"
    assert "--test" not in argv and "--budget-usd" not in argv
    done = wait_for(db, lambda e: (e.summary or {}).get("status") == "finished")
    summary = done.summary or {}
    assert 0 < summary["calls"] <= 120
    assert summary["launch"] == launch.token  # the live writes tied it to its launch
    app.run()
    assert not app.exception, app.exception
    assert any("finished" in m.value for m in app.markdown)
    assert any(m.value == "**Candidates**" for m in app.markdown)


def test_the_batch_form_offers_a_limit_and_a_model_per_alias(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = slow_folder(tmp_path, delay_s=0.0, copies=1)
    monkeypatch.setenv("FLOWSTUDIO_DB", str(tmp_path / "s.db"))
    monkeypatch.setenv(DIR_ENV, str(folder))
    started: list[list[str]] = []

    def start(db: Path, kind: str, flow: str, args: list[str], cwd: Path | None = None) -> launches.Launch:
        started.append(args)
        return launches.Launch(token="t", kind=kind, flow=flow, pid=-1)

    monkeypatch.setattr(launches, "start", start)
    app = AppTest.from_function(_experiments_page, default_timeout=TIMEOUT)
    app.run()
    override = app.selectbox(key="batch_model_default")
    assert override.value == "" and override.options[0] == "as in the flow: scripted"
    assert {"local/smollm2", "openai/gpt-4o-mini"} <= set(override.options)
    override.set_value("local/smollm2")
    app.number_input(key="batch_limit").set_value(2)
    app.button(key="start_batch").click().run()
    assert not app.exception, app.exception
    assert started[0][-4:] == ["--limit", "2", "--model", "default=local/smollm2"]


def test_the_blame_hint_never_shows_a_database_password() -> None:
    from studio.app.experiments_page import _shown

    assert _shown("postgresql://ann:s3cret@127.0.0.1:5432/runs") == "postgresql://ann:***@127.0.0.1:5432/runs"
    assert _shown(Path("/tmp/flowstudio.db")) == "/tmp/flowstudio.db"
