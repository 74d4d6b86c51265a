"""A run started from the editor: node statuses go pending → running → finished, in a thread."""

from __future__ import annotations

import shutil
from pathlib import Path

from studio.app.editor_run import EditorRun, start_run
from studio.store import SQLiteStore
from studio.versions.snapshot import take
from tests.conftest import FIXTURES


def test_a_run_reports_each_node_and_ends_with_the_run_status(tmp_path: Path) -> None:
    flow = tmp_path / "commented.yaml"
    shutil.copy(FIXTURES / "commented.yaml", flow)
    run = start_run(flow, {"question": "why?"}, ["answer", "shout"], tmp_path / "runs.db")
    assert run.thread is not None
    run.thread.join(timeout=60)
    assert run.done and run.status == "succeeded" and run.error is None
    assert run.statuses == {"answer": "succeeded", "shout": "succeeded"}
    assert run.tokens == {"answer": "ok"}  # the LLM node's reply arrived as streamed tokens
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        record = store.get_run(run.run_id or "")
        assert record is not None and record.status == "succeeded"
        assert record.version == take(flow).version_id  # the id `publish` would give, as `run FILE` records
    finally:
        store.close()


def test_step_events_move_a_node_through_its_states() -> None:
    run = EditorRun(statuses={"answer": "pending"})
    run.hook(event="run_started", run_id="r1")
    run.hook(event="step_started", run_id="r1", node="answer")
    assert run.statuses == {"answer": "running"} and run.run_id == "r1"
    run.hook(event="step_started", run_id="r1", node="map[0].inner")  # steps inside sub-flows stay out
    assert run.statuses == {"answer": "running"}


def test_a_flow_that_does_not_start_reports_the_error(tmp_path: Path) -> None:
    flow = tmp_path / "broken.yaml"
    flow.write_text("flowstudio: 1\nname: broken\nnodes:\n  a: {type: nope}\n", encoding="utf-8")
    run = start_run(flow, {}, ["a"], tmp_path / "runs.db")
    assert run.thread is not None
    run.thread.join(timeout=60)
    assert run.status == "error" and run.error is not None and "unknown node type" in run.error


def test_the_page_waits_for_the_run_to_change_not_a_fixed_beat() -> None:
    import threading
    import time

    run = EditorRun(statuses={"answer": "pending"})
    start = time.perf_counter()
    run.wait(0.01, 0.3)  # nothing happens: the longest wait
    assert time.perf_counter() - start >= 0.29
    threading.Timer(0.05, lambda: run.hook(event="token", run_id="r1", node="answer", text="Hi")).start()
    start = time.perf_counter()
    run.wait(0.01, 5.0)  # a token wakes the page
    assert time.perf_counter() - start < 2.0 and run.tokens == {"answer": "Hi"}
    assert not run.changed.is_set()  # consumed: the next wait waits again
