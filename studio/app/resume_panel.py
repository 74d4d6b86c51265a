"""A waiting run: show what each human-input node asks and resume the run with the answers."""

from __future__ import annotations

import asyncio

import streamlit as st

from studio.app.settings import settings
from studio.errors import FlowError
from studio.runtime.runner import resume_run_async
from studio.types import value_from_text
from studio.viewer.trace import Trace


def waiting_panel(trace: Trace) -> None:
    """One answer field per waiting node and a Resume button; reruns the page when done."""
    waiting = {s.node: s for s in trace.steps if s.status == "waiting"}
    done = {s.node for s in trace.steps if s.status == "succeeded"}
    asks = {node: step for node, step in waiting.items() if node not in done}
    if trace.run.status != "waiting" or not asks:
        return
    with st.form(f"resume_{trace.run.run_id}"):
        st.subheader("Waiting for input")
        answers = {}
        for node, step in asks.items():
            st.text(step.error or "")
            answers[node] = st.text_input(
                f"Answer for {node}", key=f"answer_{node}", help="JSON (true, 3, [..]) or text"
            )
        if not st.form_submit_button("Resume run"):
            return
    values = {node: value_from_text(text) for node, text in answers.items()}
    try:
        result = asyncio.run(resume_run_async(trace.run.run_id, values=values, db=settings().db))
    except FlowError as err:  # the runner names a waiting node's answer `values.NODE`
        field = err.field or ""
        st.error(
            f"Answer for {field.removeprefix('values.')}: {err.message}" if field.startswith("values.") else err.message
        )
        return
    st.success(f"Run {result.run_id} is {result.status}.")
    st.rerun()
