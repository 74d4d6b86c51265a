"""History: a flow's published versions (tags, when, note, batch scores), Publish, the diff between
any two, and per version Restore into the editor, Tag and Promote: the operations of `flowstudio
publish`, `versions`, `diff`, `tag` and `promote`, called as those commands call them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import streamlit as st

from studio.app import promote_panel
from studio.app.diff_view import render_diff
from studio.app.editor_page import _editors
from studio.app.nav import editor_page
from studio.app.run_page import flow_files
from studio.app.settings import open_store as open_app_store
from studio.app.settings import settings
from studio.editor.editor import Editor
from studio.errors import FlowError, InputError
from studio.flow.spec import Flow, load_flow
from studio.store.versions import VersionRecord
from studio.versions.history import check_tag, history, publish
from studio.versions.promote import RunsAndVersions
from studio.versions.refs import short
from studio.viewer.versions import (
    WORKING,
    Side,
    diff_sides,
    table_rows,
    version_label,
    version_side,
    version_text,
    working_id,
    working_side,
)

NEXT = "history_flow_next"
"""A flow another page asked History to open (a path of the folder)."""
LINKED = "history_flow_linked"


@contextmanager
def open_store() -> Iterator[RunsAndVersions]:
    """The studio's store, with the version operations every store has."""
    with open_app_store() as store:
        yield cast(RunsAndVersions, store)


def _pick(folder: Path) -> Path | None:
    """The flow picker; opens on a flow named by another page or by `?flow=`."""
    files = flow_files(folder)
    if not files:
        st.info(f"No flow files in {folder} yet.")
        return None
    named = st.query_params.get("flow")
    wanted = st.session_state.pop(NEXT, None)
    if wanted in files:
        st.session_state["history_flow"] = wanted
    elif named and named != st.session_state.get(LINKED):
        st.session_state["history_flow"] = next((f for f in files if str(f.relative_to(folder)) == named), None)
    if st.session_state.get("history_flow") not in files:
        st.session_state["history_flow"] = files[0]
    path: Path = st.selectbox("Flow", files, format_func=lambda p: str(p.relative_to(folder)), key="history_flow")
    st.session_state[LINKED] = st.query_params["flow"] = str(path.relative_to(folder))
    return path


def _publish(path: Path) -> None:
    """Tag and note; Publish stores the file as saved on disk (the same content keeps its id)."""
    with st.container(border=True, key="history_publish"):
        st.markdown("**Publish** the file as saved on disk")
        tag_cell, note_cell, button_cell = st.columns([1, 3, 1], vertical_alignment="bottom")
        tag = tag_cell.text_input("Tag (optional)", key="history_publish_tag", placeholder="prod, v2…")
        note = note_cell.text_input("Note (optional)", key="history_publish_note", placeholder="what changed")
        if button_cell.button("Publish", type="primary", icon=":material/publish:", key="history_publish_go"):
            try:
                with open_store() as store:
                    done = publish(store, path, tag=tag.strip() or None, note=note.strip() or None)
            except (FlowError, InputError) as err:
                st.error(str(err), icon=":material/error:")
                return
            said = "Published" if done.new else "Already published as"
            st.toast(f"{said} {done.version.flow}@{short(done.version.version_id)}" + (f" [{tag}]" if tag else ""))
            st.rerun()


def _where(rows: list[dict[str, Any]], working: str | None) -> None:
    """Which version the file on disk is."""
    match = next((row for row in rows if row["version"] == working), None)
    if working is None:
        st.warning("The file on disk does not load: fix it in the Editor to publish it.", icon=":material/error:")
    elif match is not None:
        st.caption(f"The file on disk is version {version_label(match)}.")
    elif rows:
        st.caption("The file on disk has changes not published yet.")


def _restore(path: Path, version: VersionRecord) -> None:
    """The version's flow file becomes the Editor's flow (one undoable, unsaved step); the Editor opens."""
    editors = _editors()
    try:
        with open_store() as store:
            text = version_text(store, version)
        editor = editors.get(str(path)) or Editor(path)
        editor.replace_text(text)
    except (FlowError, LookupError) as err:
        st.error(f"Version {short(version.version_id)} could not be restored: {err}", icon=":material/error:")
        return
    editor.refit = True
    editors[str(path)] = editor
    st.session_state["editor_flow_next"] = path
    st.switch_page(editor_page())


def _tag(name: str, version: VersionRecord) -> None:
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    tag = left.text_input("Tag", key="history_tag", placeholder="prod")
    if right.button("Set tag", icon=":material/sell:", key="history_tag_go"):
        try:
            check_tag(tag.strip())
        except InputError as err:
            st.error(str(err), icon=":material/error:")
            return
        with open_store() as store:
            store.set_tag(name, tag.strip(), version.version_id)
        st.toast(f"tag {name}@{tag.strip()} → {short(version.version_id)}")
        st.rerun()


def _version_actions(path: Path, flow: Flow, rows: list[dict[str, Any]], versions: dict[str, VersionRecord]) -> None:
    """Pick a version; Restore into the editor, Tag, Promote."""
    st.subheader("A version")
    labels = {row["version"]: version_label(row) for row in rows}
    chosen = st.selectbox("Version", list(labels), format_func=labels.__getitem__, key="history_version")
    version = versions[chosen]
    restore_cell, tag_cell = st.columns([1, 2], vertical_alignment="bottom")
    if restore_cell.button("Restore into the editor", icon=":material/restore:", key="history_restore"):
        _restore(path, version)
    with tag_cell:
        _tag(flow.spec.name, version)
    with st.expander("Promote: move a tag here only if a batch scores it no worse", icon=":material/upgrade:"):
        promote_panel.form(flow, f"{flow.spec.name}@{version.version_id[:16]}")
    promote_panel.status(flow.spec.name)


def _side(choice: str, path: Path, versions: dict[str, VersionRecord], labels: dict[str, str]) -> Side:
    if choice == WORKING:
        return working_side(path)
    with open_store() as store:
        return version_side(store, versions[choice], labels[choice])


def _diff(path: Path, rows: list[dict[str, Any]], versions: dict[str, VersionRecord]) -> None:
    """Two pickers (a version or the working file); the semantic diff between them."""
    st.subheader("Diff")
    labels = {row["version"]: version_label(row) for row in rows} | {WORKING: WORKING}
    options = list(labels)
    older = options[1] if len(rows) > 1 else options[0]
    newer = options[0] if len(rows) > 1 else WORKING
    left, right = st.columns(2)
    a = left.selectbox("From", options, options.index(older), format_func=labels.__getitem__, key="history_diff_a")
    b = right.selectbox("To", options, options.index(newer), format_func=labels.__getitem__, key="history_diff_b")
    if a is None or b is None:
        return
    try:
        diff = diff_sides(_side(a, path, versions, labels), _side(b, path, versions, labels))
    except FlowError as err:
        st.error(str(err), icon=":material/error:")
        return
    render_diff(diff)


def render() -> None:
    """Flow picker, Publish, the versions table, a version's actions, and the diff of two."""
    st.title("History")
    path = _pick(settings().flows_dir)
    if path is None:
        return
    try:
        flow = load_flow(path)
    except FlowError as err:
        st.error(f"{path.name} does not load: {err}", icon=":material/error:")
        return
    _publish(path)
    with open_store() as store:
        rows = history(store, flow.spec.name)
        versions = {v.version_id: v for v in store.list_versions(flow.spec.name)}
    working = working_id(path)
    st.subheader(f"Versions of {flow.spec.name}")
    _where(rows, working)
    if not rows:
        st.info("No published version yet: Publish above, or `flowstudio publish FILE`.")
        return
    st.dataframe(table_rows(rows, working), hide_index=True, key="history_table")
    _version_actions(path, flow, rows, versions)
    _diff(path, rows, versions)
