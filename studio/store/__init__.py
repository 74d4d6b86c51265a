"""Stores for runs, steps and model calls."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from studio.errors import InputError
from studio.store.base import CallRecord, RunRecord, StepRecord, Store
from studio.store.memory import MemoryStore
from studio.store.sqlite import SQLiteStore

__all__ = [
    "CallRecord", "MemoryStore", "RunRecord", "SQLiteStore", "StepRecord", "Store", "db_location", "default_db_path",
    "open_store", "shown",
]  # fmt: skip

DB_ENV = "FLOWSTUDIO_DB"


def default_db_path(flow_dir: Path | None = None) -> Path:
    """FLOWSTUDIO_DB (a SQLite file) else `.flowstudio/flowstudio.db` beside the flows: a local folder
    for what sits beside the store (materialised versions, launch logs) when FLOWSTUDIO_DB is a URL."""
    if os.environ.get(DB_ENV) and not is_url(os.environ[DB_ENV]):
        return Path(os.environ[DB_ENV])
    return (flow_dir or Path.cwd()) / ".flowstudio" / "flowstudio.db"


def is_url(db: str | Path) -> bool:
    """Whether a `--db` value names a PostgreSQL server (`postgresql://...`) rather than a SQLite file."""
    return isinstance(db, str) and db.startswith(("postgresql://", "postgres://"))


def db_location(db: str | Path | None = None, flow_dir: Path | None = None) -> str | Path:
    """Where the store is: `db`, else FLOWSTUDIO_DB, else the default file; a PostgreSQL URL stays a string."""
    given = db if db else os.environ.get(DB_ENV)
    if given and is_url(str(given)):
        return str(given)
    return Path(given) if given else default_db_path(flow_dir)


def shown(db: str | Path) -> str:
    """A store location for messages: a PostgreSQL URL without its password."""
    import re

    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", str(db)) if is_url(db) else str(db)


def open_store(db: str | Path | None = None, *, group_commit: bool = True) -> Store:
    """The one place a store is opened from a location: PostgreSQL for a `postgresql://` URL, else SQLite."""
    where = db_location(db)
    if isinstance(where, Path):
        try:
            return SQLiteStore(where, group_commit=group_commit)
        except (OSError, sqlite3.Error) as err:  # a folder that cannot be made, a file that is no database
            reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            raise InputError(f"{where}: cannot open the store: {reason}", field="--db") from None
    try:
        from studio.store.postgres import PostgresStore
    except ImportError as err:
        raise InputError(
            f"--db {where.split('@')[-1]} needs the postgres extra: pip install 'flowstudio[postgres]' ({err})",
            field="--db",
        ) from err
    return PostgresStore(where, group_commit=group_commit)
