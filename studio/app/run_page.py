"""Run: pick a flow in the folder, fill a form made from its inputs, watch it run, land on its trace."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import streamlit as st

from studio.app.input_fields import input_widget
from studio.app.links import trace_page
from studio.app.settings import settings
from studio.app.widgets import badge, ident
from studio.editor.files import flow_files
from studio.errors import FlowError
from studio.flow.spec import Flow, load_flow
from studio.store.base import StepRecord


def _run(path: Path, values: dict[str, Any], flow: Flow) -> str | None:
    """Run the flow with a hook that redraws the per-node status after every step."""
    from studio.runtime.runner import run_flow_async

    statuses = dict.fromkeys(flow.spec.nodes, "pending")
    board = st.empty()

    def draw() -> None:
        board.markdown("  \n".join(f"{ident(node)}: {badge(status)}" for node, status in statuses.items()))

    def hook(*, event: str, run_id: str, **details: Any) -> None:
        step = details.get("step")
        if event == "step_finished" and isinstance(step, StepRecord) and step.node in statuses:
            statuses[step.node] = step.status
            draw()

    draw()
    try:
        result = asyncio.run(run_flow_async(path, values, db=settings().db, hooks=[hook]))
    except FlowError as err:
        st.error("The flow did not start.")
        st.code(str(err), language=None, wrap_lines=True)
        return None
    return result.run_id


def render() -> None:
    """Flow picker, inputs form, run button."""
    st.title("Run a flow")
    folder = settings().flows_dir
    files = flow_files(folder)
    if not files:
        st.info(f"No flow files in {folder}.")
        return
    path = st.selectbox("Flow", files, format_func=lambda p: str(p.relative_to(folder)), key="run_flow")
    try:
        flow = load_flow(path)
    except FlowError as err:
        st.error("This flow does not load.")
        st.code(str(err), language=None, wrap_lines=True)
        return
    if flow.spec.description:
        st.caption(flow.spec.description)
    with st.form("inputs"):
        values = {name: input_widget(name, spec) for name, spec in flow.spec.inputs.items()}
        submitted = st.form_submit_button("Run", type="primary")
    if submitted:
        run_id = _run(path, values, flow)
        if run_id:
            st.switch_page(trace_page(), query_params={"run": run_id})
