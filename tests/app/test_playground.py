"""The Playground's model: streamed tokens by node, the canvas notes (preview, error), outputs and chat ports."""

from __future__ import annotations

import shutil
from pathlib import Path

from studio.app.editor_run import EditorRun, start_run
from studio.app.playground import chat_ports, notes
from studio.flow.spec import load_flow
from studio.store.base import StepRecord
from tests.conftest import FIXTURES, FLOWS


def test_token_events_stream_into_the_run_s_own_node() -> None:
    run = EditorRun(statuses={"answer": "pending", "each": "pending"})
    run.hook(event="token", run_id="r1", node="answer", text="Hel")
    run.hook(event="token", run_id="r1", node="answer", text="lo")
    run.hook(event="token", run_id="r1", node="each[2].summarise", text="x")
    assert run.tokens == {"answer": "Hello", "each": "x"}
    assert notes(run)["answer"] == {"preview": "Hello"}


def test_notes_show_a_node_s_text_output_and_its_error() -> None:
    run = EditorRun(statuses={"a": "pending", "b": "pending"})
    run.hook(event="step_finished", run_id="r", step=StepRecord(node="a", status="succeeded", outputs={"text": "done"}))
    run.hook(event="step_finished", run_id="r", step=StepRecord(node="b", status="failed", error="auth: refused"))
    assert notes(run) == {"a": {"preview": "done"}, "b": {"run_error": "auth: refused"}}


def test_a_finished_run_keeps_its_outputs_and_steps(tmp_path: Path) -> None:
    flow = tmp_path / "commented.yaml"
    shutil.copy(FIXTURES / "commented.yaml", flow)
    run = start_run(flow, {"question": "why?"}, ["answer", "shout"], tmp_path / "runs.db")
    assert run.thread is not None
    run.thread.join(timeout=60)
    assert run.outputs == {"answer": "ok"} and run.steps["shout"].outputs == {"text": "OK"}
    assert run.inputs == {"question": "why?"}


def test_a_flow_with_one_text_input_and_one_output_can_chat() -> None:
    assert chat_ports(load_flow(FIXTURES / "commented.yaml")) == ("question", "answer")
    assert chat_ports(load_flow(FLOWS / "route-question.yaml")) is None  # two outputs
