"""Editor: open or create a flow, change it on the canvas, save it, run it and watch each node."""

from __future__ import annotations

import re
from pathlib import Path

import streamlit as st

from studio.app.canvas import flow_canvas
from studio.app.editor_run import EditorRun
from studio.app.inspector import render_flow_settings, render_inspector
from studio.app.links import history_page
from studio.app.new_flow import ICON, LABEL, new_flow_form
from studio.app.open_editors import open_editors
from studio.app.playground import notes, render_playground, run_from_toolbar, run_key
from studio.app.settings import settings
from studio.editor.drafts import keep_draft, read_draft
from studio.editor.editor import Editor
from studio.editor.files import flow_files
from studio.errors import FlowError

POLL_S = 0.4
"""While a run goes on, the page redraws at least this often..."""
REDRAW_LEAST_S = 0.1
"""...and as soon as the run changes (a status, a streamed token), but not more often than this."""
INSPECTOR, FLOW, PLAYGROUND = "Inspector", "Flow", "Playground"
PICKER_PX = 210
"""The flow picker's width in the toolbar (a longer name shows whole in its list)."""
CANVAS_LEAST_PX = 480
"""The canvas is as tall as the window allows below the toolbar, and never shorter than this."""


def _new_flow_form(folder: Path, files: list[Path]) -> None:
    with st.popover(LABEL, icon=ICON):
        path = new_flow_form(folder, files, key="new_flow")
        if path is not None:
            st.session_state["editor_flow_next"] = path
            st.rerun()


LINKED = "editor_flow_linked"
"""The `?flow=` last shown in the URL, so that the URL opens a flow once and then follows the picker."""


def _linked(folder: Path, files: list[Path]) -> Path | None:
    """The flow a link opens (`editor?flow=flows/x.yaml`, relative to the folder), when the URL names
    one other than the URL this page last wrote."""
    named = st.query_params.get("flow")
    if not named or named == st.session_state.get(LINKED):
        return None
    return next((f for f in files if str(f.relative_to(folder)) == named), None)


def _pick(folder: Path, files: list[Path]) -> Editor | None:
    """The flow picker (in the toolbar row); the open editor for the chosen file."""
    if not files:
        st.info(f"No flow files in {folder} yet: create one.")
        return None
    wanted = st.session_state.pop("editor_flow_next", None)  # a sub-flow the canvas asked to open
    if wanted in files:
        st.session_state["editor_flow"] = wanted
    elif (linked := _linked(folder, files)) is not None:
        st.session_state["editor_flow"] = linked
    if st.session_state.get("editor_flow") not in files:
        st.session_state["editor_flow"] = files[0]
    path = st.selectbox(
        "Flow",
        files,
        format_func=lambda p: str(p.relative_to(folder)),
        key="editor_flow",
        label_visibility="collapsed",
        width=PICKER_PX,
    )
    st.session_state[LINKED] = st.query_params["flow"] = str(path.relative_to(folder))
    editors = open_editors()
    editor = editors.get(str(path))
    if editor is not None and editor.changed_on_disk() and not _keep_or_reload(editor):
        editor = None
    if editor is None:
        try:
            editors[str(path)] = editor = Editor(path)
            draft = st.session_state[_offer_key(editor)] = read_draft(path, editor.saved_text)
            st.session_state[_slot_key(editor)] = "" if draft is not None else None
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


def _run_button(editor: Editor) -> None:
    """Starts the run with the Playground's inputs, and shows the Playground (the side panel too);
    while a required input is empty it only opens the Playground, to fill it in."""
    current: EditorRun | None = st.session_state.get(run_key(editor))
    running = current is not None and not current.done
    if st.button(
        "Run", icon=":material/play_arrow:", key="editor_run_open", disabled=editor.checked is None or running
    ):
        st.session_state["editor_panel"] = PLAYGROUND
        st.session_state["editor_inspector_open"] = True
        run_from_toolbar(editor)


def _save_button(editor: Editor) -> None:
    if st.button(
        "Save",
        icon=":material/save:",
        type="primary" if editor.dirty else "secondary",
        key="editor_save",
        help="Ctrl/Cmd+S",
    ):
        written = editor.save()
        st.toast(
            "Saved " + ", ".join(p.name for p in written) if written else "Nothing to save", icon=":material/save:"
        )


def _run_status(editor: Editor) -> EditorRun | None:
    current: EditorRun | None = st.session_state.get(run_key(editor))
    # always a line, so its room in the toolbar is kept: the first edit's words never wrap the row
    st.caption("Unsaved changes" if editor.dirty else "\u00a0")
    if current is not None and not current.done:
        done = sum(s not in ("pending", "running") for s in current.statuses.values())
        st.caption(f"Running… {done} of {len(current.statuses)} nodes done")
    elif current is not None:
        st.caption(f"Last run: {current.status}")
    return current


def _problems(editor: Editor) -> None:
    """The flow's problems, each where it is (the file by its name: the folder is the picker's)."""
    for problem in editor.problems:
        where = problem.where.replace(str(editor.path), editor.path.name)
        st.error(f"{where}: {problem.message}", icon=":material/error:")


def _problem_line(where: str) -> int | None:
    """The line of a problem's `file:line at field`, when it names one."""
    match = re.search(r":(\d+)(?: at |$)", where)
    return int(match.group(1)) if match else None


def _apply_text(editor: Editor, text: str) -> None:
    try:
        editor.replace_text(text)
    except FlowError as err:
        st.error(str(err))
        return
    st.rerun()


def _code_editor(editor: Editor) -> bool:
    """The kept code-editor component (Ace): line numbers, each problem marked at its line, Apply
    (Ctrl+Enter); False where it is not installed."""
    try:
        from code_editor import code_editor  # type: ignore[import-untyped]
    except ImportError:  # an install without the studio extra's newer pins: the plain text area below stays
        return False

    annotations = [
        {"row": line - 1, "column": 0, "type": "error", "text": problem.message}
        for problem in editor.problems
        if (line := _problem_line(problem.where))
    ]
    apply = {"name": "Apply", "feather": "Check", "hasText": True, "alwaysOn": True, "commands": ["submit"],
             "style": {"bottom": "0.5rem", "right": "0.5rem"}}  # fmt: skip
    reply = code_editor(
        editor.flow.text,
        lang="yaml",
        height=[20, 60],
        buttons=[apply],
        props={"annotations": annotations, "showPrintMargin": False},
        options={"showLineNumbers": True, "tabSize": 2, "useSoftTabs": True},
        key=f"code-{editor.path}-{editor.version}",
    )
    if reply.get("type") == "submit" and reply.get("text") not in (None, editor.flow.text):
        _apply_text(editor, str(reply["text"]))
    return True


def _yaml_tab(editor: Editor) -> None:
    """The file once, as Save writes it, in an editor (Apply: Ctrl+Enter); its problems by line above it."""
    st.caption(f"{editor.path.name}, exactly as Save writes it. Edit it here and Apply (Ctrl+Enter).")
    for problem in editor.problems:
        line = _problem_line(problem.where)
        st.error(f"line {line}: {problem.message}" if line else problem.message, icon=":material/error:")
    if not _code_editor(editor):
        st.caption("The code editor needs `pip install streamlit-code-editor`; the file is shown read-only.")
        st.code(editor.flow.text, language="yaml", line_numbers=True)
    with st.popover("Plain text"):
        text = st.text_area("YAML", value=editor.flow.text, height=400, key=f"yaml-{editor.path}-{editor.version}")
        if st.button("Apply YAML", key="editor_apply_yaml"):
            _apply_text(editor, text)


PAGE_STYLE = """
<style>
.block-container { padding-top: 3.3rem; padding-bottom: 0; padding-left: 1.25rem; padding-right: 1.25rem; }
.st-key-editor_toolbar { gap: 0.5rem; }
.st-key-editor_inspector { max-height: calc(100vh - 8.5rem); overflow-y: auto; padding-right: 0.25rem; }
.st-key-editor_toolbar h4 { padding: 0; white-space: nowrap; }
.st-key-editor_status { min-width: 6.5rem; }
@media (max-width: 1100px) { .st-key-editor_toolbar .st-key-editor_flow { width: 120px !important; min-width: 0; flex: 0 0 120px; } }
[data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] .st-key-editor_inspector) { flex-wrap: nowrap; }
[data-testid="stColumn"]:has(.st-key-editor_inspector) { min-width: 300px; }
</style>
"""
"""Fixed text: the Editor uses the whole window (the canvas fills it below one toolbar row)."""
LEAVE_GUARD = """
<script>
if (!window.flowstudioLeaveGuard) {
  window.flowstudioLeaveGuard = true;
  window.addEventListener("beforeunload", (event) => {
    const status = document.querySelector(".st-key-editor_status");
    if (status && status.innerText.includes("Unsaved changes")) {
      event.preventDefault();
      event.returnValue = "";
    }
  });
}
</script>
"""
"""Fixed script: leaving the page (reload, close, another address) while the toolbar says
"Unsaved changes" asks first, as the browser asks (the draft keeps the edits either way)."""


def _toolbar(folder: Path) -> tuple[Editor | None, EditorRun | None, str, bool]:
    """One row: title, flow, new, save, run, status, view, inspector; returns what the page needs below it.
    Each takes the width its words need (a narrow window wraps the row rather than cutting a word)."""
    files = flow_files(folder)
    with st.container(key="editor_toolbar", horizontal=True, vertical_alignment="center", gap="small"):
        st.markdown("#### Editor", width="content")
        editor = _pick(folder, files)
        _new_flow_form(folder, files)
        if editor is None:
            return None, None, "Canvas", False
        before = editor.selected
        editor.apply_events(st.session_state.get(f"canvas:{editor.path}"))
        if editor.selected not in (None, before):
            _bring_inspector_forward(editor)
        if editor.open_request is not None:
            _open_subflow(editor, files)
        _save_button(editor)
        _run_button(editor)
        where = str(editor.path.relative_to(folder))
        st.page_link(history_page(), label="History", icon=":material/history:", query_params={"flow": where})
        with st.container(width="stretch", key="editor_status"):
            current = _run_status(editor)
        view = st.segmented_control(
            "View", ["Canvas", "YAML"], default="Canvas", key="editor_view", label_visibility="collapsed"
        )
        inspector = st.toggle(
            "Panel", value=True, key="editor_inspector_open", help="The Inspector or Playground beside the canvas"
        )
    return editor, current, view or "Canvas", inspector


def _offer_key(editor: Editor) -> str:
    return f"draft_offer:{editor.path}"


def _slot_key(editor: Editor) -> str:
    """The draft slot's line once the offer is answered; None: no slot (no draft when the flow opened)."""
    return f"draft_slot:{editor.path}"


DRAFT_SLOT_PX = 48
"""The draft offer's row above the canvas. It stays, as one line, once the offer is answered (or an
edit drops it), so the canvas below never moves under the pointer."""


def _draft_offer(editor: Editor) -> None:
    """A draft left by an earlier session (a reload, a closed tab): Restore makes it the flow (one
    undoable step, unsaved), Discard removes it. Editing first discards it too. Its row keeps its
    height until the flow is opened again."""
    draft: str | None = st.session_state.get(_offer_key(editor))
    if draft is not None and editor.dirty:
        draft = st.session_state[_offer_key(editor)] = None
        st.session_state[_slot_key(editor)] = "The earlier visit's draft was replaced by your edits."
    line: str | None = st.session_state.get(_slot_key(editor))
    if line is None:
        return
    with st.container(
        horizontal=True, vertical_alignment="center", key="editor_draft", height=DRAFT_SLOT_PX, border=False
    ):
        if draft is None:
            st.caption(line)
            return
        st.markdown(
            f":material/history: **{editor.path.name}** has unsaved edits from an earlier visit.", width="content"
        )
        restore = st.button("Restore", type="primary", key="editor_draft_restore")
        discard = st.button("Discard", key="editor_draft_discard")
    if restore or discard:
        _answer_draft(editor, draft if restore else None)


def _answer_draft(editor: Editor, restored: str | None) -> None:
    """Restore (`restored`: the draft's text) or Discard; the slot then says what happened."""
    st.session_state[_offer_key(editor)] = None
    line = "Draft restored: unsaved until you Save." if restored is not None else "Draft discarded."
    try:
        if restored is not None:
            editor.replace_text(restored)
    except FlowError as err:
        line = f"The draft could not be restored: {err}"
    st.session_state[_slot_key(editor)] = line
    st.rerun()


def _keep_draft(editor: Editor) -> None:
    """Keep the flow's text beside it while it differs from the file (written when it changes);
    remove the draft when they agree. A draft still offered is left as it is."""
    if st.session_state.get(_offer_key(editor)) is not None:
        return
    wanted = editor.flow.text if editor.flow.text != editor.saved_text else None
    kept = f"draft_kept:{editor.path}"
    if st.session_state.get(kept, "") != wanted:
        keep_draft(editor.path, wanted)
        st.session_state[kept] = wanted


def _bring_inspector_forward(editor: Editor) -> None:
    """A node was just clicked (or added): its Inspector comes forward, unless the Playground shows
    a run, where the click shows the node's step instead."""
    if st.session_state.get("editor_panel") == PLAYGROUND and st.session_state.get(run_key(editor)) is not None:
        return
    st.session_state["editor_panel"] = INSPECTOR


def _open_subflow(editor: Editor, files: list[Path]) -> None:
    """The canvas asked to open a node's sub-flow: switch to it when it is one of the folder's flows."""
    wanted, editor.open_request = editor.open_request, None
    match = next((f for f in files if f.resolve() == wanted), None)
    if match is None:
        st.toast(f"{wanted} is not a flow file of this folder", icon=":material/error:")
        return
    st.session_state["editor_flow_next"] = match
    st.rerun()


def _side_panel(editor: Editor) -> None:
    """Only the chosen panel is built: the flow's tables cost a rerun of a 200-node flow more than the canvas."""
    panel = st.segmented_control(
        "Panel", [INSPECTOR, FLOW, PLAYGROUND], default=INSPECTOR, key="editor_panel", label_visibility="collapsed"
    )
    if panel == PLAYGROUND:
        render_playground(editor)
    elif panel == FLOW:
        render_flow_settings(editor)
    else:
        _problems(editor)
        render_inspector(editor)


def render() -> None:
    """One toolbar row; below it the canvas filling the window, with the inspector as a side panel (or the YAML)."""
    st.html(PAGE_STYLE + LEAVE_GUARD, unsafe_allow_javascript=True)
    editor, current, view, inspector = _toolbar(settings().flows_dir)
    if editor is None:
        return
    _draft_offer(editor)
    if view == "YAML":  # only the view on screen is built: a 200-node flow's YAML is long
        _yaml_tab(editor)
    else:
        left, right = st.columns([3, 1]) if inspector else (st.container(), None)
        if right is not None:  # first: a click's Inspector reaches the browser before the canvas's graph
            with right, st.container(key="editor_inspector", border=False):
                _side_panel(editor)
            current = st.session_state.get(run_key(editor))  # the Playground may just have started one
        with left:
            status = current.statuses if current is not None else None
            graph = editor.graph(status, fit=editor.version == 1 or editor.refit, notes=notes(current))
            editor.refit = False
            flow_canvas(graph, key=f"canvas:{editor.path}", height=CANVAS_LEAST_PX, fill=True)
    _keep_draft(editor)
    editor.flow.prepare()  # parse for editing while the browser draws
    current = st.session_state.get(run_key(editor))  # the Playground may just have started one
    if current is not None and not current.done:
        current.wait(REDRAW_LEAST_S, POLL_S)
        st.rerun()
