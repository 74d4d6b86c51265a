"""Typed vocabularies: error kinds, step and run statuses, hook events."""

from __future__ import annotations

from typing import Any, get_args

from studio.errors import NOT_RETRIED, TRANSIENT, ErrorKind
from studio.flow.spec import ScriptError, load_flow_text
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine
from studio.runtime.hooks import HOOK_EVENTS, Hook
from studio.store import MemoryStore
from studio.store.base import StepStatus

FLOW = """flowstudio: 1
name: vocab
inputs: {q: {type: str}}
outputs: {a: $ask.text}
models:
  default: {model: scripted, script: [{error: {kind: auth}}]}
nodes:
  ask:
    type: llm.generate
    inputs: {q: $inputs.q}
    config: {prompt: "{{ q }}"}
"""


def test_retry_sets_are_error_kinds() -> None:
    kinds = set(get_args(ErrorKind))
    assert kinds >= TRANSIENT and kinds >= NOT_RETRIED and not TRANSIENT & NOT_RETRIED
    assert set(get_args(ScriptError.model_fields["kind"].annotation)) <= kinds


def test_hooks_see_only_the_declared_events_with_keyword_arguments() -> None:
    seen: list[dict[str, Any]] = []

    def hook(*, event: str, run_id: str, **future_kwargs: Any) -> None:
        seen.append({"event": event, "run_id": run_id, **future_kwargs})

    hooks: list[Hook] = [hook]
    store = MemoryStore()
    result = Engine(store, hooks=hooks).run_sync(compile_flow(load_flow_text(FLOW)), {"q": "hi"})
    assert result.status == "failed"
    assert [e["event"] for e in seen] == ["run_started", "step_started", "step_finished", "run_finished"]
    assert {e["event"] for e in seen} <= set(HOOK_EVENTS) and {"token", "waiting"} <= set(HOOK_EVENTS)
    assert all(e["run_id"] == result.run_id for e in seen)
    step = store.steps(result.run_id)[0]
    assert step.status in get_args(StepStatus) and step.error_kind == "auth" and step.error_kind in get_args(ErrorKind)
