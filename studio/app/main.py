"""The script `streamlit run` executes: page setup, and the pages registered under their URL paths
(`links.py`), the one module that imports every page."""

from collections.abc import Callable

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from studio.app import (
    editor_page,
    experiments_page,
    history_page,
    home_page,
    review_page,
    run_page,
    runs_page,
    trace_page,
)
from studio.app.links import EDITOR, EXPERIMENTS, HISTORY, HOME, PAGES, REVIEWS, RUN, RUNS, TRACES, PageSpec, page

RENDERS: dict[PageSpec, Callable[[], None]] = {
    HOME: home_page.render,
    RUNS: runs_page.render,
    REVIEWS: review_page.render,
    TRACES: trace_page.render,
    EXPERIMENTS: experiments_page.render,
    RUN: run_page.render,
    EDITOR: editor_page.render,
    HISTORY: history_page.render,
}


def registered(*specs: PageSpec) -> list[StreamlitPage]:
    """The pages to register with `st.navigation`, each drawn by its module's `render` (all when none named)."""
    return [page(spec, RENDERS[spec]) for spec in specs or PAGES]


def main() -> None:
    """Page setup, then the page the URL names."""
    st.set_page_config(page_title="Flowstudio", page_icon=":material/account_tree:", layout="wide")
    st.navigation(registered(), position="top").run()  # no sidebar: the Editor's canvas gets the width


if __name__ == "__main__":  # `streamlit run` executes this file as __main__; tests import `registered`
    main()
