"""Editor: open or create a flow, change it on the canvas, save it, run it and watch each node."""

from __future__ import annotations

import re
import time
from pathlib import Path

import streamlit as st

from studio.app.canvas import flow_canvas
from studio.app.editor_run import EditorRun, start_run
from studio.app.inspector import render_inspector
from studio.app.nav import trace_page
from studio.app.run_page import flow_files, input_widget
from studio.app.settings import settings
from studio.editor.document import new_flow_text
from studio.editor.editor import Editor
from studio.editor.layout import sidecar_path
from studio.errors import FlowError
from studio.flow.fmt import dump, round_trip_yaml
from studio.flow.spec import FLOW_NAME

EMPTY = "(empty flow)"
POLL_S = 0.4


def _editors() -> dict[str, Editor]:
    """Open editors by file, so switching flows keeps unsaved work."""
    editors: dict[str, Editor] = st.session_state.setdefault("editors", {})
    return editors


def _free_name(folder: Path) -> str:
    number, name = 1, "new-flow"
    while (folder / f"{name}.yaml").exists():
        number += 1
        name = f"new-flow-{number}"
    return name


def _create(folder: Path, name: str, start: Path | None) -> Path:
    """Write a new flow file: empty, or a copy of `start` under the new name (with its layout)."""
    if not re.fullmatch(FLOW_NAME, name):
        raise FlowError("a flow name is lowercase letters, digits and dashes", field="name")
    path = folder / f"{name}.yaml"
    if path.exists():
        raise FlowError(f"{path.name} exists already", field="name")
    if start is None:
        path.write_text(new_flow_text(name), encoding="utf-8")
        return path
    document = round_trip_yaml().load(start.read_text(encoding="utf-8"))
    document["name"] = name
    path.write_text(dump(document), encoding="utf-8")
    if sidecar_path(start).exists():
        sidecar_path(path).write_text(sidecar_path(start).read_text(encoding="utf-8"), encoding="utf-8")
    return path


def _new_flow_form(folder: Path, files: list[Path]) -> None:
    with st.popover("New flow", icon=":material/add:"):
        created = st.session_state.get("flows_created", 0)
        name = st.text_input("Name", value=_free_name(folder), key=f"new_flow_name_{created}")
        choices: list[Path | None] = [None, *files]
        start = st.selectbox(
            "Start from",
            choices,
            format_func=lambda p: EMPTY if p is None else str(p.relative_to(folder)),
            key="new_flow_start",
        )
        if st.button("Create", type="primary", key="new_flow_create"):
            try:
                path = _create(folder, name.strip(), start)
            except FlowError as err:
                st.error(f"{err.field}: {err.message}")
                return
            st.session_state["editor_flow"] = path
            st.session_state["flows_created"] = created + 1
            st.rerun()


def _pick(folder: Path) -> Editor | None:
    files = flow_files(folder)
    left, right = st.columns([4, 1], vertical_alignment="bottom")
    with right:
        _new_flow_form(folder, files)
    if not files:
        st.info(f"No flow files in {folder} yet: create one.")
        return None
    if st.session_state.get("editor_flow") not in files:
        st.session_state["editor_flow"] = files[0]
    with left:
        path = st.selectbox("Flow", files, format_func=lambda p: str(p.relative_to(folder)), key="editor_flow")
    editors = _editors()
    editor = editors.get(str(path))
    if editor is not None and editor.changed_on_disk() and not _keep_or_reload(editor):
        editor = None
    if editor is None:
        try:
            editors[str(path)] = editor = Editor(path)
        except FlowError as err:
            st.error("This file cannot be opened in the editor.")
            st.code(str(err), language=None, wrap_lines=True)
            return None
    return editor


def _keep_or_reload(editor: Editor) -> bool:
    """The file changed on disk: reload it when nothing here is unsaved, else let the person choose."""
    if not editor.dirty:
        return False
    st.warning(f"{editor.path.name} changed on disk since it was opened here; saving will overwrite it.")
    return not st.button("Reload from disk (discard the changes made here)", key="editor_reload")


def _run_form(editor: Editor) -> None:
    with st.popover("Run", icon=":material/play_arrow:", disabled=editor.checked is None):
        if editor.checked is None:
            return
        if editor.dirty:
            st.caption("Running saves the flow first.")
        with st.form("editor_run_inputs", border=False):
            values = {name: input_widget(name, spec) for name, spec in editor.checked.spec.inputs.items()}
            go = st.form_submit_button("Start", type="primary")
        if go:
            if editor.dirty:
                editor.save()
            nodes = [str(n) for n in editor.flow.nodes()]
            st.session_state[f"run:{editor.path}"] = start_run(editor.path, values, nodes, settings().db)
            st.rerun()


def _toolbar(editor: Editor) -> EditorRun | None:
    save, run, state = st.columns([1, 1, 4], vertical_alignment="center")
    with save:
        if st.button(
            "Save", icon=":material/save:", type="primary" if editor.dirty else "secondary", key="editor_save"
        ):
            written = editor.save()
            st.toast(
                "Saved " + ", ".join(p.name for p in written) if written else "Nothing to save", icon=":material/save:"
            )
    with run:
        _run_form(editor)
    current: EditorRun | None = st.session_state.get(f"run:{editor.path}")
    with state:
        if editor.dirty:
            st.caption("Unsaved changes")
        if current is not None:
            _run_state(current)
    return current


def _run_state(current: EditorRun) -> None:
    if not current.done:
        st.caption(
            f"Running… {sum(s != 'pending' for s in current.statuses.values())} of {len(current.statuses)} nodes done"
        )
        return
    if current.error:
        st.error(current.error)
    if current.run_id and st.button(f"Open trace ({current.status})", key="editor_open_trace"):
        st.switch_page(trace_page(), query_params={"run": current.run_id})


def _problems(editor: Editor) -> None:
    for problem in editor.problems:
        st.error(f"{problem.where}: {problem.message}", icon=":material/error:")


def _yaml_tab(editor: Editor) -> None:
    st.caption(f"{editor.path.name}, exactly as Save writes it.")
    st.code(editor.flow.text, language="yaml", line_numbers=True)
    with st.expander("Edit the YAML"):
        text = st.text_area("YAML", value=editor.flow.text, height=400, key=f"yaml-{editor.path}-{editor.version}")
        if st.button("Apply YAML", key="editor_apply_yaml"):
            try:
                editor.replace_text(text)
            except FlowError as err:
                st.error(str(err))
                return
            st.rerun()
    _problems(editor)


def render() -> None:
    """Flow picker, toolbar, canvas with inspector, YAML tab."""
    st.title("Editor")
    editor = _pick(settings().flows_dir)
    if editor is None:
        return
    canvas_key = f"canvas:{editor.path}"
    editor.apply_events(st.session_state.get(canvas_key))
    current = _toolbar(editor)
    view = st.segmented_control(
        "View", ["Canvas", "YAML"], default="Canvas", key="editor_view", label_visibility="collapsed"
    )
    if view == "YAML":  # only the view on screen is built: a 200-node flow's YAML is long
        _yaml_tab(editor)
    else:
        left, right = st.columns([3, 1])
        with left:
            status = current.statuses if current is not None else None
            flow_canvas(editor.graph(status, fit=editor.version == 1), key=canvas_key, height=620)
            _problems(editor)
        with right, st.container(height=680, border=False):  # as tall as the canvas; scrolls inside
            render_inspector(editor)
    editor.flow.prepare()  # parse for editing while the browser draws
    if current is not None and not current.done:
        time.sleep(POLL_S)
        st.rerun()
