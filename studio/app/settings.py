"""What the app reads from its environment: the store and the folder of flows."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from studio.cli.launch import DIR_ENV
from studio.store import SQLiteStore, default_db_path


@dataclass(frozen=True)
class Settings:
    """`db`: the SQLite store; `flows_dir`: where the Run page looks for flows."""

    db: Path
    flows_dir: Path


def settings() -> Settings:
    """From `FLOWSTUDIO_DB` and `FLOWSTUDIO_STUDIO_DIR`, which `flowstudio studio` sets."""
    return Settings(db=default_db_path(), flows_dir=Path(os.environ.get(DIR_ENV, ".")))


@contextmanager
def open_store() -> Iterator[SQLiteStore]:
    """A store for one script run; each run of a page opens and closes its own connection."""
    store = SQLiteStore(settings().db)
    try:
        yield store
    finally:
        store.close()
