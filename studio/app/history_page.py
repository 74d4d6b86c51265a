"""History: a flow's published versions (tags, who and when, note, batch scores), Publish, the diff between
any two, and per version Restore into the editor, Tag and Promote: the operations of `flowstudio
publish`, `versions`, `diff`, `tag` and `promote`, called as those commands call them."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import streamlit as st

from studio.app import promote_panel
from studio.app.diff_view import render_diff
from studio.app.open_editors import open_editors
from studio.app.restore_version import restore_into_editor
from studio.app.settings import open_store as open_app_store
from studio.app.settings import settings
from studio.editor.files import flow_files
from studio.errors import FlowError, InputError
from studio.flow.spec import Flow, load_flow
from studio.store.versions import VersionRecord
from studio.versions.history import Published, check_tag, history, publish
from studio.versions.promote import RunsAndVersions
from studio.versions.refs import short
from studio.versions.snapshot import working_id
from studio.viewer.versions import (
    WORKING,
    Side,
    diff_sides,
    other_files_changed,
    table_rows,
    version_label,
    version_side,
    version_text,
    working_side,
)

PICKER_PX = 260
NEXT = "history_flow_next"
"""A flow another page asked History to open (a path of the folder)."""
LINKED = "history_flow_linked"
DONE = "history_done"
"""How many publishes and tags this session made: their fields' keys change, so each starts empty."""


@contextmanager
def open_store() -> Iterator[RunsAndVersions]:
    """The studio's store, with the version operations every store has."""
    with open_app_store() as store:
        yield cast(RunsAndVersions, store)


def _fresh(key: str) -> str:
    """A text field's key, new after each publish or tag (the field starts empty again)."""
    return f"{key}_{st.session_state.get(DONE, 0)}"


def _done() -> None:
    st.session_state[DONE] = st.session_state.get(DONE, 0) + 1
    st.rerun()


def choose_version(where: Any, label: str, labels: dict[str, str], default: str, key: str) -> str:
    """A picker of version ids shown by their labels; keeps its choice when a label changes (a new
    tag), which a Streamlit selectbox whose labels change does not."""
    options = list(labels)
    kept = st.session_state.get(key, default)
    index = options.index(kept if kept in options else default)
    stamp = hashlib.sha1("|".join(labels.values()).encode()).hexdigest()[:8]
    chosen = where.selectbox(label, options, index, format_func=labels.__getitem__, key=f"{key}_{stamp}")
    st.session_state[key] = chosen
    return str(chosen)


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
    path: Path = st.selectbox(
        "Flow", files, format_func=lambda p: str(p.relative_to(folder)), key="history_flow", width=PICKER_PX
    )
    st.session_state[LINKED] = st.query_params["flow"] = str(path.relative_to(folder))
    return path


def _publish(path: Path, newest: str | None) -> None:
    """Tag and note; Publish stores the file as saved on disk (the same content keeps its id), then
    picks it, and diffs it against the version that was newest (`newest`)."""
    with st.container(border=True, key="history_publish"):
        open_here = open_editors().get(str(path))
        if open_here is not None and open_here.dirty:
            st.warning("The Editor has unsaved changes to this flow: Save them there to publish them.")
        with st.container(horizontal=True, vertical_alignment="center"):
            st.markdown("**Publish** the file as saved on disk", width="content")
            tag = st.text_input(
                "Tag (optional)", key=_fresh("history_publish_tag"), placeholder="tag (optional): prod, v2…",
                label_visibility="collapsed", width=220,
            )  # fmt: skip
            note = st.text_input(
                "Note (optional)", key=_fresh("history_publish_note"), placeholder="note (optional): what changed",
                label_visibility="collapsed",
            )  # fmt: skip
            publish_clicked = st.button("Publish", type="primary", icon=":material/publish:", key="history_publish_go")
        if publish_clicked:
            try:
                with open_store() as store:
                    done = publish(store, path, tag=tag.strip() or None, note=note.strip() or None)
            except (FlowError, InputError) as err:
                st.error(str(err), icon=":material/error:")
                return
            _published(done, newest)


def _published(done: Published, newest: str | None) -> None:
    """Pick the version just published, and diff it against the one that was newest."""
    version_id = done.version.version_id
    st.session_state["history_version"] = version_id
    if newest is not None and newest != version_id:
        st.session_state["history_diff_a"], st.session_state["history_diff_b"] = newest, version_id
    said = "Published" if done.new else "Already published as"
    st.toast(f"{said} {done.version.flow}@{short(version_id)}" + (f" [{done.tag}]" if done.tag else ""))
    _done()


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
    """The version's flow file into the Editor (unsaved); the Editor opens."""
    try:
        with open_store() as store:
            text = version_text(store, version)
        restore_into_editor(path, text)
    except (FlowError, LookupError) as err:
        st.error(f"Version {short(version.version_id)} could not be restored: {err}", icon=":material/error:")


def _tag(name: str, version: VersionRecord) -> None:
    tag = st.text_input("Tag", key=_fresh("history_tag"), placeholder="prod", width=140)
    if st.button("Set tag", icon=":material/sell:", key="history_tag_go"):
        try:
            check_tag(tag.strip())
        except InputError as err:
            st.error(str(err), icon=":material/error:")
            return
        with open_store() as store:
            store.set_tag(name, tag.strip(), version.version_id)
        st.toast(f"tag {name}@{tag.strip()} → {short(version.version_id)}")
        _done()


def _version_actions(path: Path, flow: Flow, rows: list[dict[str, Any]], versions: dict[str, VersionRecord]) -> None:
    """Pick a version; Restore into the editor, Tag, Promote."""
    labels = {row["version"]: version_label(row) for row in rows}
    with st.container(horizontal=True, vertical_alignment="bottom", key="history_actions"):
        with st.container(width=340):
            chosen = choose_version(st, "Version", labels, rows[0]["version"], "history_version")
        version = versions[chosen]
        if st.button("Restore into the editor", icon=":material/restore:", key="history_restore"):
            _restore(path, version)
        _tag(flow.spec.name, version)
    others = other_files_changed(path, version)
    if others:
        st.caption(
            "Restore brings back the flow file only; the version's other files differ from the folder's: "
            + ", ".join(others) + f". `{flow.spec.name}@{short(chosen)}` runs the version with all of them."
        )  # fmt: skip
    with st.expander(
        "Promote: move a tag to this version only if a batch scores it no worse", icon=":material/upgrade:"
    ):
        promote_panel.form(flow, f"{flow.spec.name}@{version.version_id[:16]}")
    promote_panel.status(flow.spec.name)


def _side(choice: str, path: Path, versions: dict[str, VersionRecord], labels: dict[str, str]) -> Side:
    if choice == WORKING:
        return working_side(path)
    with open_store() as store:
        return version_side(store, versions[choice], labels[choice])


def _diff(path: Path, rows: list[dict[str, Any]], versions: dict[str, VersionRecord]) -> None:
    """Two pickers (a version or the working file); the semantic diff between them."""
    st.subheader("Diff", anchor=False)
    labels = {row["version"]: version_label(row) for row in rows} | {WORKING: WORKING}
    options = list(labels)
    older = options[1] if len(rows) > 1 else options[0]
    newer = options[0] if len(rows) > 1 else WORKING
    left, right = st.columns(2)
    a = choose_version(left, "From", labels, older, "history_diff_a")
    b = choose_version(right, "To", labels, newer, "history_diff_b")
    try:
        diff = diff_sides(_side(a, path, versions, labels), _side(b, path, versions, labels))
    except FlowError as err:
        st.error(str(err), icon=":material/error:")
        return
    render_diff(diff)


def render() -> None:
    """Flow picker, Publish, the versions table, a version's actions, and the diff of two."""
    with st.container(horizontal=True, vertical_alignment="bottom", key="history_toolbar"):
        st.title("History", anchor=False, width="content")
        path = _pick(settings().flows_dir)
    if path is None:
        return
    try:
        flow = load_flow(path)
    except FlowError as err:
        st.error(f"{path.name} does not load: {err}", icon=":material/error:")
        return
    with open_store() as store:
        rows = history(store, flow.spec.name)
        versions = {v.version_id: v for v in store.list_versions(flow.spec.name)}
    _publish(path, rows[0]["version"] if rows else None)
    working = working_id(path)
    st.subheader(f"Versions of {flow.spec.name}", anchor=False)
    _where(rows, working)
    if not rows:
        st.info("No published version yet: Publish above, or `flowstudio publish FILE`.")
        return
    st.dataframe(table_rows(rows, working), hide_index=True, key="history_table")
    _version_actions(path, flow, rows, versions)
    _diff(path, rows, versions)
