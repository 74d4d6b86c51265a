"""The "New flow" form, on Home (in an expander, its fields in a row) and on the Editor's toolbar
(in a popover, stacked): a free name, a flow to start from or an empty one, and Create."""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from studio.editor.files import create_flow, free_name
from studio.errors import FlowError

LABEL, ICON = "New flow", ":material/add:"
"""What opens the form, in both places."""
EMPTY = "(empty flow)"
"""The start that is no flow: a new flow with no node."""


def _cells(across: bool) -> list[DeltaGenerator]:
    """Where the name, the start and the button go: a row of columns, or one under another."""
    if across:
        return list(st.columns([2, 3, 1], vertical_alignment="bottom"))
    return [st.container() for _ in range(3)]


def new_flow_form(folder: Path, files: list[Path], *, key: str, across: bool = False) -> Path | None:
    """The form's fields, keyed `{key}_name_N`, `{key}_start`, `{key}_create`: the file Create just
    wrote (the name field then offers the next free name), else None (a bad name is shown)."""
    created = st.session_state.get(f"{key}_created", 0)
    name_cell, start_cell, button_cell = _cells(across)
    name = name_cell.text_input("Name", value=free_name(folder), key=f"{key}_name_{created}")
    choices: list[Path | None] = [None, *files]
    start = start_cell.selectbox(
        "Start from",
        choices,
        format_func=lambda p: EMPTY if p is None else str(p.relative_to(folder)),
        key=f"{key}_start",
    )
    if not button_cell.button("Create", type="primary", key=f"{key}_create"):
        return None
    try:
        path = create_flow(folder, name.strip(), start)
    except FlowError as err:
        st.error(f"{err.field}: {err.message}")
        return None
    st.session_state[f"{key}_created"] = created + 1
    return path
