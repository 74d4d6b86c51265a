"""Undo and redo over snapshots of the flow text and the layout (both small; no diffing needed)."""

from __future__ import annotations

from dataclasses import dataclass

from studio.editor.layout import Layout

LIMIT = 200
"""Snapshots kept; the oldest go first."""


@dataclass(frozen=True)
class Snapshot:
    text: str
    layout: tuple[tuple[str, tuple[float, float]], ...]

    @classmethod
    def of(cls, text: str, layout: Layout) -> Snapshot:
        return cls(text, tuple(layout.items()))


class History:
    """A line of snapshots with a cursor; a new snapshot after an undo drops the redo branch."""

    def __init__(self, first: Snapshot) -> None:
        self.snapshots = [first]
        self.cursor = 0

    def push(self, snapshot: Snapshot) -> None:
        if snapshot == self.snapshots[self.cursor]:
            return
        del self.snapshots[self.cursor + 1 :]
        self.snapshots.append(snapshot)
        if len(self.snapshots) > LIMIT:
            del self.snapshots[0]
        self.cursor = len(self.snapshots) - 1

    @property
    def can_undo(self) -> bool:
        return self.cursor > 0

    @property
    def can_redo(self) -> bool:
        return self.cursor < len(self.snapshots) - 1

    def undo(self) -> Snapshot | None:
        if not self.can_undo:
            return None
        self.cursor -= 1
        return self.snapshots[self.cursor]

    def redo(self) -> Snapshot | None:
        if not self.can_redo:
            return None
        self.cursor += 1
        return self.snapshots[self.cursor]
