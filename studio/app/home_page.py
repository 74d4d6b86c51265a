"""Home: the folder's flows as cards (open, run, duplicate), the demo flow first and sub-flows
apart, and a new flow. The other pages are in the navigation bar above (shown once)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from studio.app.import_panel import render_import
from studio.app.links import editor_page, history_page, run_page, trace_page
from studio.app.new_flow import ICON, LABEL, new_flow_form
from studio.app.settings import open_store, settings
from studio.app.widgets import badge, reviews_link
from studio.editor.files import create_flow, flow_files, free_name
from studio.reviews.counts import ReviewCounts, review_counts
from studio.viewer.home import FlowCard, flow_card

COLUMNS = 3
DEMO_FLOW = "ticket-triage.yaml"
"""The flow `flowstudio demo` runs: first on Home, where someone new starts."""


def _open(path: Path) -> None:
    st.session_state["editor_flow_next"] = path
    st.switch_page(editor_page())


def demo_first(folder: Path, files: list[Path]) -> tuple[list[Path], list[Path]]:
    """(top-level flows with the demo flow first, sub-flows: those in subfolders such as parts/)."""
    top = [f for f in files if f.parent == folder]
    top.sort(key=lambda f: f.name != DEMO_FLOW)
    return top, [f for f in files if f.parent != folder]


def _new_flow(folder: Path, files: list[Path]) -> None:
    with st.expander(LABEL, icon=ICON, expanded=not files):
        path = new_flow_form(folder, files, key="home_new", across=True)
        if path is not None:
            _open(path)


def _card(card: FlowCard, folder: Path, number: int, reviews: ReviewCounts) -> None:
    with st.container(border=True, key=f"flow_card_{number}"):
        st.markdown(f"**{card.name}**")
        st.caption(card.description or "No description.")
        where = str(card.path.relative_to(folder))
        st.caption(f"{card.nodes} node{'s' if card.nodes != 1 else ''} · {where}")
        if card.problem:
            st.error("This file does not load.", icon=":material/error:")
        if card.last_run_id:
            st.markdown(f"Last run: {badge(card.last_status or '')} {card.last_started} UTC")
            reviews_link(card.name, reviews)
        else:
            st.caption("Not run yet.")
        with st.container(horizontal=True, vertical_alignment="center"):  # words whole: a narrow card wraps them
            if st.button("Open", key=f"card_open_{number}", icon=":material/edit:"):
                _open(card.path)
            if st.button("Run", key=f"card_run_{number}", icon=":material/play_arrow:"):
                st.session_state["run_flow"] = card.path
                st.switch_page(run_page())
            if st.button("Copy", key=f"card_copy_{number}", icon=":material/content_copy:"):
                _open(create_flow(card.path.parent, free_name(card.path.parent), card.path))
            if card.last_run_id:
                st.page_link(trace_page(), label="Trace", query_params={"run": card.last_run_id})
            st.page_link(history_page(), label="History", query_params={"flow": where})


def _cards(folder: Path, files: list[Path], first: int) -> None:
    with open_store() as store:
        cards = [flow_card(path, store) for path in files]
        reviews = {card.name: review_counts(store, card.name) for card in cards}  # type: ignore[arg-type]
    for start in range(0, len(cards), COLUMNS):
        for cell, (number, card) in zip(
            st.columns(COLUMNS), enumerate(cards[start : start + COLUMNS], first + start), strict=False
        ):
            with cell:
                _card(card, folder, number, reviews[card.name])


def render() -> None:
    """A new flow, a card per top-level flow of the folder (the demo first), then its sub-flows."""
    st.title("Flowstudio")
    folder = settings().flows_dir
    files = flow_files(folder)
    _new_flow(folder, files)
    render_import(folder)
    if not files:
        st.info(f"No flow files in {folder} yet: create one above.")
        return
    top, parts = demo_first(folder, files)
    st.subheader(f"Flows in {folder.name or folder}")
    _cards(folder, top, 0)
    if parts:
        st.subheader("Sub-flows")
        st.caption("Flows in subfolders, which other flows call (a `flow.call` node).")
        _cards(folder, parts, len(top))
