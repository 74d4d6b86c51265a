"""Stores for runs, steps and model calls."""

from __future__ import annotations

import os
from pathlib import Path

from studio.store.base import CallRecord, RunRecord, StepRecord, Store
from studio.store.memory import MemoryStore
from studio.store.sqlite import SQLiteStore

__all__ = ["CallRecord", "MemoryStore", "RunRecord", "SQLiteStore", "StepRecord", "Store", "default_db_path"]

DB_ENV = "FLOWSTUDIO_DB"


def default_db_path(flow_dir: Path | None = None) -> Path:
    """`--db` else FLOWSTUDIO_DB else `.flowstudio/flowstudio.db` beside the flows."""
    if os.environ.get(DB_ENV):
        return Path(os.environ[DB_ENV])
    return (flow_dir or Path.cwd()) / ".flowstudio" / "flowstudio.db"
