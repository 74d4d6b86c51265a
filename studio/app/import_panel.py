"""Home's Import: a Prompt flow folder or a Dify DSL file becomes a flow of the studio's folder,
with the same report the command prints (`flowstudio import`)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from studio.app.links import editor_page
from studio.errors import FlowError

REPORT = "home_import_report"
WRITTEN = "home_import_written"


def render_import(folder: Path) -> None:
    """An expander: the path to import, placeholders or not, Import; then the report and Open."""
    with st.expander("Import", icon=":material/upload_file:"):
        st.caption("A Prompt flow folder (flow.dag.yaml) or a Dify DSL export (.yml). Nothing in it runs.")
        source = st.text_input("Folder or file", key="home_import_source", placeholder="my-promptflow/ or app.yml")
        allow = st.checkbox(
            "Write a failing placeholder for each node that cannot be converted", key="home_import_allow"
        )
        if st.button("Import", key="home_import_go", disabled=not source.strip()):
            _import(folder, Path(source.strip()).expanduser(), allow)
            if st.session_state.get(WRITTEN):
                st.rerun()  # the new flow's card, below
        if st.session_state.get(REPORT):
            st.code(st.session_state[REPORT], language=None)
        written = st.session_state.get(WRITTEN)
        if written and st.button("Open", key="home_import_open", icon=":material/edit:"):
            st.session_state["editor_flow_next"] = written
            st.switch_page(editor_page())


def _import(folder: Path, source: Path, allow: bool) -> None:
    from studio.importers import free_path, import_path, write_import

    source = source if source.is_absolute() else folder / source
    st.session_state[WRITTEN] = None
    try:
        imported = import_path(source, allow_placeholders=allow)
        lines = imported.report.lines()
        if imported.report.complete or allow:
            out = free_path(folder, str(imported.flow["name"]))
            lines += [f"wrote {p.relative_to(folder)}" for p in write_import(imported, out)]
            st.session_state[WRITTEN] = out
        else:
            lines.append("Nothing written: some nodes could not be converted (tick placeholders to write it anyway).")
    except FlowError as err:
        lines = [f"error: {err}"]
    st.session_state[REPORT] = "\n".join(lines)
