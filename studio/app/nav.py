"""The app's pages, built on demand so pages can link to each other without import cycles."""

from __future__ import annotations

from urllib.parse import quote

import streamlit as st
from streamlit.navigation.page import StreamlitPage


def home_page() -> StreamlitPage:
    from studio.app.home_page import render

    return st.Page(render, title="Home", icon=":material/home:", url_path="home", default=True)


def runs_page() -> StreamlitPage:
    from studio.app.runs_page import render

    return st.Page(render, title="Runs", icon=":material/list:", url_path="runs")


def reviews_page() -> StreamlitPage:
    from studio.app.review_page import render

    return st.Page(render, title="Reviews", icon=":material/rate_review:", url_path="reviews")


def trace_page() -> StreamlitPage:
    from studio.app.trace_page import render

    return st.Page(render, title="Traces", icon=":material/account_tree:", url_path="traces")


def experiments_page() -> StreamlitPage:
    from studio.app.experiments_page import render

    return st.Page(render, title="Experiments", icon=":material/science:", url_path="experiments")


def run_page() -> StreamlitPage:
    from studio.app.run_page import render

    return st.Page(render, title="Run", icon=":material/play_arrow:", url_path="run")


def editor_page() -> StreamlitPage:
    from studio.app.editor_page import render

    return st.Page(render, title="Editor", icon=":material/edit:", url_path="editor")


def history_page() -> StreamlitPage:
    from studio.app.history_page import render

    return st.Page(render, title="History", icon=":material/history:", url_path="history")


def all_pages() -> list[StreamlitPage]:
    """Home first in the bar and the page the app opens on (the folder's flows, a way into each)."""
    return [
        home_page(),
        runs_page(),
        reviews_page(),
        trace_page(),
        experiments_page(),
        run_page(),
        editor_page(),
        history_page(),
    ]


def trace_link(run_id: str, node: str | None = None) -> str:
    """A relative link to a run's trace (opened on `node`'s details when given), for link columns in tables."""
    return f"traces?run={run_id}" + (f"&node={quote(node)}" if node else "")
