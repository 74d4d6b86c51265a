"""The studio's server process: `streamlit run` on the app, with the pages' heavy imports warmed.

Streamlit imports what a page needs on the first visit that runs it, so the first trace a user
opened after start-up paid for Altair (~0.6 s), loading the node types and building the template
compiler on top of drawing the run. A daemon thread does that work while the server starts,
before anyone has opened a page; a page that runs first just finds the module half-imported and
waits for it (Python's import lock), as it would have imported it itself.
"""

from __future__ import annotations

import importlib
import sys
import threading

PAGES = (
    "studio.app.home_page",
    "studio.app.runs_page",
    "studio.app.trace_page",
    "studio.app.experiments_page",
    "studio.app.run_page",
    "studio.app.editor_page",
)
"""Every page's module (each imports the parts it draws with)."""
LIBRARIES = ("altair", "pandas", "graphviz")
"""What the pages' charts, tables and pictures import on first use."""


def preload() -> None:
    """Import the pages, their libraries and every installed node type; build the template compiler."""
    for name in (*LIBRARIES, *PAGES):
        importlib.import_module(name)
    from studio.flow.templates import check_syntax
    from studio.runtime.registry import get, keys

    for key in keys():
        try:
            get(key)
        except Exception:  # a broken plugin: the page that needs it will say so
            continue
    check_syntax("{{ warm }}")


def main() -> None:
    """`python -m studio.app.server run SCRIPT [streamlit options]`: Streamlit's own command line."""
    threading.Thread(target=preload, name="flowstudio-preload", daemon=True).start()
    from streamlit.web.cli import main as streamlit_main

    sys.exit(streamlit_main(prog_name="streamlit"))


if __name__ == "__main__":
    main()
