"""Unsaved edits kept beside the flow (`.NAME.draft.yaml`), so a reload or a closed tab loses
nothing: the Editor writes the draft while its flow differs from the file, removes it when they
agree again (saved, undone or discarded), and offers it back when the flow is opened."""

from __future__ import annotations

import contextlib
from pathlib import Path

from studio.editor.editor import write_file


def draft_path(path: Path) -> Path:
    """Where the draft of the flow at `path` is kept: a hidden file beside it (not listed as a flow)."""
    return path.with_name(f".{path.stem}.draft.yaml")


def read_draft(path: Path, saved_text: str) -> str | None:
    """The draft of `path` when there is one that differs from the file's text."""
    try:
        text = draft_path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return text if text != saved_text else None


def keep_draft(path: Path, text: str | None) -> None:
    """Write `text` as the draft of `path` (through a rename); None removes the draft."""
    draft = draft_path(path)
    if text is None:
        with contextlib.suppress(FileNotFoundError):
            draft.unlink()
        return
    write_file(draft, text)
