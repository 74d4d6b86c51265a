"""The Home page through AppTest: a card per flow of the folder with its last run; new, copy, open."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from studio.app.settings import DIR_ENV
from studio.store import SQLiteStore
from studio.store.base import RunRecord
from studio.viewer.home import flow_card
from tests.app.seed import FLOWS

TIMEOUT = 30


def _home_page() -> None:
    from studio.app.home_page import render

    render()


def test_a_card_says_name_description_size_and_last_run(seeded: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    db, _ = seeded
    fresh = tmp_path / "fresh.yaml"
    fresh.write_text("flowstudio: 1\nname: never-run\ndescription: Not yet.\nnodes:\n  a: {type: text.template}\n")
    store = SQLiteStore(db)
    try:
        card = flow_card(FLOWS / "failing.yaml", store)
        never = flow_card(fresh, store)
    finally:
        store.close()
    assert card.name == "failing" and card.nodes >= 1 and card.last_status == "failed"
    assert card.last_run_id is not None and card.last_started
    assert never.last_run_id is None and never.nodes == 1 and never.description == "Not yet."


def test_two_files_sharing_a_name_each_show_their_own_last_run(tmp_path: Path) -> None:
    """`flowstudio optimize --out` keeps the flow's `name:`: the copy's runs are not the input's."""
    text = "flowstudio: 1\nname: ticket\nnodes:\n  a: {type: text.template}\n"
    given, optimized, untried = (tmp_path / f for f in ("ticket.yaml", "ticket.opt.yaml", "ticket.new.yaml"))
    for path in (given, optimized, untried):
        path.write_text(text)
    store = SQLiteStore(tmp_path / "db.sqlite")
    try:
        for run_id, path, started in (
            ("r1", given, "2026-01-01T00:00:00"),
            ("r2", "ticket.opt.yaml", "2026-01-02T00:00:00"),
        ):
            store.create_run(RunRecord(run_id, "ticket", str(path), "h", {}, started_at=started))
        cards = {path.name: flow_card(path, store) for path in (given, optimized, untried)}
    finally:
        store.close()
    assert cards["ticket.yaml"].last_run_id == "r1" and cards["ticket.opt.yaml"].last_run_id == "r2"
    assert cards["ticket.new.yaml"].last_run_id is None, "never run, though its name has been"


@pytest.fixture
def folder(tmp_path: Path, seeded: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> Path:
    for path in FLOWS.glob("*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    monkeypatch.setenv(DIR_ENV, str(tmp_path))
    monkeypatch.setenv("FLOWSTUDIO_DB", str(seeded[0]))
    return tmp_path


def test_home_lists_the_flows_and_creates_and_copies_them(folder: Path) -> None:
    page = AppTest.from_function(_home_page, default_timeout=TIMEOUT).run()
    assert not page.exception, page.exception
    names = [m.value for m in page.markdown if m.value.startswith("**")]
    assert names == ["**chain**", "**failing**", "**mapped**"]
    assert any("Last run: :red-background[failed]" in m.value for m in page.markdown)
    page.button(key="home_new_create").click().run()
    assert (folder / "new-flow.yaml").exists()
    page = AppTest.from_function(_home_page, default_timeout=TIMEOUT).run()
    page.button(key="card_copy_0").click().run()  # chain.yaml, the first card
    copied = folder / "new-flow-2.yaml"
    assert copied.exists() and "name: new-flow-2" in copied.read_text(encoding="utf-8")
