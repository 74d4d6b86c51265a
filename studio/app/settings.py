"""What the app reads from its environment: the store and the folder of flows."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from studio.cli.launch import DIR_ENV
from studio.store import db_location
from studio.store import open_store as open_at
from studio.store.base import Store


@dataclass(frozen=True)
class Settings:
    """`db`: the store (a SQLite file or a PostgreSQL URL); `flows_dir`: where the Run page looks for flows."""

    db: Path | str
    flows_dir: Path


def settings() -> Settings:
    """From `FLOWSTUDIO_DB` and `FLOWSTUDIO_STUDIO_DIR`, which `flowstudio studio` sets."""
    return Settings(db=db_location(), flows_dir=Path(os.environ.get(DIR_ENV, ".")))


@contextmanager
def open_store() -> Iterator[Store]:
    """A store for one script run; each run of a page opens and closes its own connection."""
    store = open_at(settings().db)
    try:
        yield store
    finally:
        store.close()
