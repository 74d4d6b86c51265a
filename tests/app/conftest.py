"""A store seeded with runs for the app's tests, and the app's environment pointing at it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from studio.app.settings import DIR_ENV
from studio.store import SQLiteStore
from tests.app.browser import chromium
from tests.app.seed import FLOWS, experiment, nested_run, seed_runs
from tests.optimize.conftest import make_task  # noqa: F401  (the optimizer's task fixture, for the optimizer page)


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A database with failing and chain runs, a sub-flow run and a batch experiment."""
    db = tmp_path_factory.mktemp("studio") / "flowstudio.db"
    runs = seed_runs(db)
    store = SQLiteStore(db)
    try:
        runs["nested"] = nested_run(store)
        experiment(store)
    finally:
        store.close()
    return db, runs


@pytest.fixture
def app_env(seeded: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Point the app at the seeded store and the test flows; returns the run ids."""
    db, runs = seeded
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    monkeypatch.setenv(DIR_ENV, str(FLOWS))
    return runs


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium for the module's browser tests (each test module that asks skips without it)."""
    pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install -e '.[dev]')")
    with chromium() as launched:
        yield launched
