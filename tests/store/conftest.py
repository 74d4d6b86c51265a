"""The conformance suites of tests/store/ run against every store: memory, SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from studio.store import MemoryStore, SQLiteStore
from studio.store.base import Store


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store | MemoryStore | SQLiteStore]:
    """Every store implementation, for the shared conformance suite."""
    made: Store
    if request.param == "postgresql":
        from studio.store.postgres import PostgresStore

        made = PostgresStore(request.getfixturevalue("postgres_url"))
    else:
        made = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "s.db")
    yield made
    made.close()
