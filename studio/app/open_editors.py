"""The Editors open in this browser session, by file: the Editor page draws one, History restores
into one, and switching flows keeps each one's unsaved work."""

from __future__ import annotations

import streamlit as st

from studio.editor.editor import Editor


def open_editors() -> dict[str, Editor]:
    """Open editors by file, so switching flows keeps unsaved work."""
    editors: dict[str, Editor] = st.session_state.setdefault("editors", {})
    return editors
