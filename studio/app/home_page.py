"""Home: the folder's flows as cards (open, run, duplicate), a new flow, and the way to runs,
traces and experiments."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from studio.app.editor_page import EMPTY, _create, _free_name
from studio.app.nav import editor_page, experiments_page, run_page, runs_page, trace_page
from studio.app.run_page import flow_files
from studio.app.settings import open_store, settings
from studio.app.widgets import badge
from studio.errors import FlowError
from studio.viewer.home import FlowCard, flow_card

COLUMNS = 3


def _open(path: Path) -> None:
    st.session_state["editor_flow_next"] = path
    st.switch_page(editor_page())


def _links() -> None:
    cells = st.columns(4)
    cells[0].page_link(runs_page(), label="Runs", icon=":material/list:")
    cells[1].page_link(trace_page(), label="Traces", icon=":material/account_tree:")
    cells[2].page_link(experiments_page(), label="Experiments", icon=":material/science:")
    cells[3].page_link(editor_page(), label="Editor", icon=":material/edit:")


def _new_flow(folder: Path, files: list[Path]) -> None:
    with st.expander("New flow", icon=":material/add:", expanded=not files):
        created = st.session_state.get("home_created", 0)
        name_cell, start_cell, button_cell = st.columns([2, 3, 1], vertical_alignment="bottom")
        name = name_cell.text_input("Name", value=_free_name(folder), key=f"home_new_name_{created}")
        choices: list[Path | None] = [None, *files]
        start = start_cell.selectbox(
            "Start from",
            choices,
            format_func=lambda p: EMPTY if p is None else str(p.relative_to(folder)),
            key="home_new_start",
        )
        if button_cell.button("Create", type="primary", key="home_new_create"):
            try:
                path = _create(folder, name.strip(), start)
            except FlowError as err:
                st.error(f"{err.field}: {err.message}")
                return
            st.session_state["home_created"] = created + 1
            _open(path)


def _card(card: FlowCard, folder: Path, number: int) -> None:
    with st.container(border=True, key=f"flow_card_{number}"):
        st.markdown(f"**{card.name}**")
        st.caption(card.description or "No description.")
        where = str(card.path.relative_to(folder))
        st.caption(f"{card.nodes} node{'s' if card.nodes != 1 else ''} · {where}")
        if card.problem:
            st.error("This file does not load.", icon=":material/error:")
        if card.last_run_id:
            st.markdown(f"Last run: {badge(card.last_status or '')} {card.last_started} UTC")
        else:
            st.caption("Not run yet.")
        open_cell, run_cell, copy_cell, trace_cell = st.columns(4)
        if open_cell.button("Open", key=f"card_open_{number}", icon=":material/edit:", width="stretch"):
            _open(card.path)
        if run_cell.button("Run", key=f"card_run_{number}", icon=":material/play_arrow:", width="stretch"):
            st.session_state["run_flow"] = card.path
            st.switch_page(run_page())
        if copy_cell.button("Copy", key=f"card_copy_{number}", icon=":material/content_copy:", width="stretch"):
            _open(_create(card.path.parent, _free_name(card.path.parent), card.path))
        if card.last_run_id:
            trace_cell.page_link(trace_page(), label="Trace", query_params={"run": card.last_run_id})


def render() -> None:
    """Links to the other pages, a new flow, and a card per flow of the folder."""
    st.title("Flowstudio")
    _links()
    folder = settings().flows_dir
    files = flow_files(folder)
    _new_flow(folder, files)
    if not files:
        st.info(f"No flow files in {folder} yet: create one above.")
        return
    with open_store() as store:
        cards = [flow_card(path, store) for path in files]
    st.subheader(f"Flows in {folder.name or folder}")
    for start in range(0, len(cards), COLUMNS):
        for cell, (number, card) in zip(
            st.columns(COLUMNS), enumerate(cards[start : start + COLUMNS], start), strict=False
        ):
            with cell:
                _card(card, folder, number)
