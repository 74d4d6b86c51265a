"""Run: pick a flow in the folder, fill a form made from its inputs, watch it run, land on its trace."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import streamlit as st

from studio.app.nav import trace_page
from studio.app.settings import settings
from studio.app.widgets import badge, ident
from studio.errors import FlowError
from studio.flow.spec import Flow, InputSpec, load_flow
from studio.store.base import StepRecord

SKIP_DIRS = {"node_modules", "__pycache__"}


def flow_files(folder: Path) -> list[Path]:
    """Flow files in `folder` and its direct subfolders (not hidden ones); layout sidecars excluded."""
    candidates = [*folder.glob("*.y*ml"), *folder.glob("*/*.y*ml")]
    found = []
    for path in sorted(candidates):
        hidden = any(part.startswith(".") or part in SKIP_DIRS for part in path.relative_to(folder).parts)
        if hidden or path.name.endswith((".layout.yaml", ".layout.yml")):
            continue
        try:
            head = path.read_text(encoding="utf-8")[:4096]
        except (OSError, UnicodeDecodeError):
            continue
        if any(line.startswith("flowstudio:") for line in head.splitlines()):
            found.append(path)
    return found


def _kind(spec: InputSpec) -> str:
    return spec.type.replace(" ", "").removesuffix("|null")


def input_widget(name: str, spec: InputSpec, key: str | None = None) -> Any:
    """One form field per input, by its declared type; lists, dicts and `any` take JSON."""
    kind = _kind(spec)
    help_text = spec.description or None
    default = None if spec.required else spec.default
    label = f"{name} ({spec.type})"
    if kind == "str":
        return st.text_area(label, value=default or "", help=help_text, height=80, key=key)
    if kind == "int":
        return st.number_input(label, value=int(default or 0), step=1, help=help_text, key=key)
    if kind == "float":
        return st.number_input(label, value=float(default or 0.0), help=help_text, key=key)
    if kind == "bool":
        return st.checkbox(label, value=bool(default), help=help_text, key=key)
    text = st.text_area(
        label,
        value=json.dumps(default) if default is not None else "",
        help=help_text + " (JSON)" if help_text else "JSON",
        key=key,
    )
    return input_value(spec, text)


def input_value(spec: InputSpec, raw: Any) -> Any:
    """What an input's field holds as the run's value: JSON read for lists, dicts and `any`."""
    if _kind(spec) in ("str", "int", "float", "bool") or not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw) if raw.strip() else None
    except json.JSONDecodeError:
        return raw


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
