"""Restore into the editor: a published version's flow file becomes the Editor's flow, as one
undoable, unsaved change, and the Editor opens on it (Save writes it)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import streamlit as st

from studio.app.links import editor_page
from studio.app.open_editors import open_editors
from studio.editor.drafts import read_draft
from studio.editor.editor import Editor
from studio.errors import FlowError


def opened(path: Path) -> Editor:
    """A new Editor on the file, holding the draft an earlier visit left (when there is one) as a
    change, so that Undo after a Restore gets back to it."""
    editor = Editor(path)
    draft = read_draft(path, editor.saved_text)
    if draft is not None:
        with contextlib.suppress(FlowError):  # a draft that no longer loads: the restored version replaces it
            editor.replace_text(draft)
    return editor


def restore_into_editor(path: Path, text: str) -> None:
    """`text` becomes the flow of the Editor on `path` (the open one, unsaved work kept in its
    undo history), then the Editor page opens; FlowError when the text does not load."""
    editors = open_editors()
    editor = editors.get(str(path)) or opened(path)
    editor.replace_text(text)
    editor.refit = True
    editors[str(path)] = editor
    st.session_state["editor_flow_next"] = path
    st.switch_page(editor_page())
