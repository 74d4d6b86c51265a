"""Where each page lives: its title, icon and URL path, and the links to it. Imports no page, so any
page links to any other; `main.py` registers the pages under these same URL paths."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

import streamlit as st
from streamlit.navigation.page import StreamlitPage


@dataclass(frozen=True)
class PageSpec:
    """A page's place in the navigation bar: its title, icon and URL path."""

    title: str
    icon: str
    url_path: str
    default: bool = False


HOME = PageSpec("Home", ":material/home:", "home", default=True)
RUNS = PageSpec("Runs", ":material/list:", "runs")
REVIEWS = PageSpec("Reviews", ":material/rate_review:", "reviews")
TRACES = PageSpec("Traces", ":material/account_tree:", "traces")
EXPERIMENTS = PageSpec("Experiments", ":material/science:", "experiments")
RUN = PageSpec("Run", ":material/play_arrow:", "run")
EDITOR = PageSpec("Editor", ":material/edit:", "editor")
HISTORY = PageSpec("History", ":material/history:", "history")
PAGES = (HOME, RUNS, REVIEWS, TRACES, EXPERIMENTS, RUN, EDITOR, HISTORY)
"""Their order in the bar: Home first, the page the app opens on."""


def _registered_by_main() -> None:
    """A link's page never runs: Streamlit goes to the page registered under the same URL path."""


def page(spec: PageSpec, render: Callable[[], None] = _registered_by_main) -> StreamlitPage:
    """The page at `spec`'s URL path: with `render` to register it, without it to link to it
    (`st.page_link`, `st.switch_page`), since Streamlit finds a page by its URL path."""
    return st.Page(render, title=spec.title, icon=spec.icon, url_path=spec.url_path, default=spec.default)


def reviews_page() -> StreamlitPage:
    """A link to Reviews."""
    return page(REVIEWS)


def trace_page() -> StreamlitPage:
    """A link to Traces."""
    return page(TRACES)


def run_page() -> StreamlitPage:
    """A link to Run."""
    return page(RUN)


def editor_page() -> StreamlitPage:
    """A link to the Editor."""
    return page(EDITOR)


def history_page() -> StreamlitPage:
    """A link to History."""
    return page(HISTORY)


def trace_link(run_id: str, node: str | None = None) -> str:
    """A relative link to a run's trace (opened on `node`'s details when given), for link columns in tables."""
    return f"{TRACES.url_path}?run={run_id}" + (f"&node={quote(node)}" if node else "")
