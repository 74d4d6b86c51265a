"""The rich progress bar the long commands draw on stderr (`batch`, `optimize`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Bar:
    """One task's bar: update its fields, print a line above it."""

    progress: Any
    """The `rich.progress.Progress` drawing it."""
    task: Any
    """Its task id."""

    def update(self, **fields: Any) -> None:
        """Set `completed`, `total`, `description` or a field the columns read (`task.fields[...]`)."""
        self.progress.update(self.task, **fields)

    def print(self, text: str) -> None:
        """A line above the bar, kept in the terminal's scrollback."""
        self.progress.console.print(text, highlight=False)


@contextmanager
def progress_bar(
    lead: str, texts: Sequence[str], *, total: int, description: str, extra: Sequence[Any] = (), **fields: Any
) -> Iterator[Bar]:
    """A bar on stderr: the `lead` text, the bar, done of total, then `texts` (rich format strings
    over `task.description` and `task.fields`, whose first values are `fields`) and `extra` columns."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    columns = (TextColumn(lead), BarColumn(), MofNCompleteColumn(), *map(TextColumn, texts), *extra)
    with Progress(*columns, console=Console(stderr=True)) as progress:
        yield Bar(progress, progress.add_task(description, total=total, **fields))
