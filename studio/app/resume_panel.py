"""A waiting run: show what each human-input node asks and resume the run with the answers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import streamlit as st

from studio.app.settings import settings
from studio.errors import FlowError
from studio.runtime.runner import resume_run_async
from studio.store.base import StepRecord
from studio.types import value_from_text
from studio.viewer.trace import Trace


def answer_fields(asks: Iterable[StepRecord], key: str) -> dict[str, str]:
    """Inside a form: what each waiting node asks and a field for its answer; the texts typed, by node."""
    answers = {}
    for step in asks:
        st.text(step.error or "")
        answers[step.node] = st.text_input(
            f"Answer for {step.node}", key=f"{key}_{step.node}", help="JSON (true, 3, [..]) or text"
        )
    return answers


def answer_values(answers: dict[str, str]) -> dict[str, Any]:
    """The typed answers as values: JSON where they parse, else the text."""
    return {node: value_from_text(text) for node, text in answers.items()}


def answer_error(err: FlowError) -> str:
    """The runner names a waiting node's answer `values.NODE`; the page words it as its field."""
    field = err.field or ""
    return f"Answer for {field.removeprefix('values.')}: {err.message}" if field.startswith("values.") else err.message


def waiting_panel(trace: Trace) -> None:
    """One answer field per waiting node and a Resume button; reruns the page when done."""
    waiting = {s.node: s for s in trace.steps if s.status == "waiting"}
    done = {s.node for s in trace.steps if s.status == "succeeded"}
    asks = [step for node, step in waiting.items() if node not in done]
    if trace.run.status != "waiting" or not asks:
        return
    with st.form(f"resume_{trace.run.run_id}"):
        st.subheader("Waiting for input")
        answers = answer_fields(asks, "answer")
        if not st.form_submit_button("Resume run"):
            return
    try:
        result = asyncio.run(resume_run_async(trace.run.run_id, values=answer_values(answers), db=settings().db))
    except FlowError as err:
        st.error(answer_error(err))
        return
    st.success(f"Run {result.run_id} is {result.status}.")
    st.rerun()
