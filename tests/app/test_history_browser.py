"""History in a real browser: a flow published twice shows both versions with their tags, the diff
names the changed node and field, Set tag and Publish work from the page, and Restore puts the older
version into the Editor, unsaved (screenshots at 1440x900 and 1024x768 in test-artifacts/)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.app.browser import CHROMIUM, choose, settled, studio_server
from tests.app.history_seed import published
from tests.conftest import FLOWSTUDIO, ROOT
from tests.versions.project import edit

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install -e '.[dev]')")
ARTIFACTS = ROOT / "test-artifacts"
WAIT_MS = 30_000


def _shot(page: Any, name: str, *, full: bool = False) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    settled(page)
    page.wait_for_timeout(1000)  # the tables draw after the script has finished
    page.screenshot(path=str(ARTIFACTS / f"history-{name}.png"), full_page=full)


def _picked(page: Any, label: str, text: str) -> None:
    """The selectbox `label` shows an option containing `text`."""
    box = page.get_by_role("combobox", name=label, exact=True)
    sync_api.expect(box).to_have_value(re.compile(re.escape(text)), timeout=WAIT_MS)


def test_versions_diff_tag_publish_and_restore(browser: Any, tmp_path: Path) -> None:
    expect = sync_api.expect
    main, db, (first, second) = published(tmp_path)
    with studio_server(FLOWSTUDIO, main.parent, db, tmp_path / "studio.log") as (url, _):
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        try:
            page.goto(f"{url}/history?flow=greet.yaml")
            expect(page.get_by_role("heading", name="Versions of greet")).to_be_visible(timeout=WAIT_MS)
            _picked(page, "Version", f"{second[:12]} [prod] · warmer")
            _picked(page, "From", f"{first[:12]} [v1] · first")
            expect(page.get_by_text("Node say · field config.prompt")).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_text("-Say {{ word }} politely.")).to_be_visible(timeout=WAIT_MS)
            _shot(page, "1440-top")
            page.mouse.move(700, 450)
            page.mouse.wheel(0, 600)
            _shot(page, "1440-diff")
            page.mouse.wheel(0, -2000)

            page.get_by_label("Tag", exact=True).fill("stable")
            page.get_by_role("button", name="Set tag").click()
            _picked(page, "Version", f"{second[:12]} [prod, stable]")

            edit(main, "warmly", "kindly")
            page.get_by_label("Tag (optional)").fill("v3")
            page.get_by_label("Note (optional)").fill("kinder")
            page.get_by_role("button", name="Publish").click()
            _picked(page, "Version", "[v3] · kinder")
            _picked(page, "From", f"{second[:12]} [prod, stable]")
            expect(page.get_by_text("+Say {{ word }} kindly.")).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_text("The file on disk is version")).to_be_visible()

            page.get_by_text("Promote: move a tag").click()
            choose(page, "Dataset", "words.jsonl")
            choose(page, "expected loud", "want")
            _shot(page, "1440-promote-form")
            page.get_by_role("button", name="Promote", exact=True).click()
            expect(page.get_by_text("Promoted: prod →")).to_be_visible(timeout=90_000)
            expect(page.get_by_text("0.750 is not worse than 0.750")).to_be_visible()
            page.get_by_text("Promoted: prod →").scroll_into_view_if_needed()
            _shot(page, "1440-promoted")
            _picked(page, "Version", "[prod, v3] · kinder")

            choose(page, "Version", f"{first[:12]} [v1] · first")
            page.get_by_role("button", name="Restore into the editor").click()
            expect(page.get_by_role("heading", name="Editor")).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_text("Unsaved changes")).to_be_visible(timeout=WAIT_MS)
            assert "kindly" in main.read_text(), "Restore leaves the file as it is until Save"
            _shot(page, "1440-restored")
            page.get_by_role("button", name="Save").click()
            expect(page.get_by_text("Unsaved changes")).to_have_count(0, timeout=WAIT_MS)
            assert "politely" in main.read_text(), "saved: the file is v1's again"
        finally:
            page.close()
        small = browser.new_page(viewport={"width": 1024, "height": 768})
        try:
            small.goto(f"{url}/history?flow=greet.yaml")
            expect(small.get_by_role("heading", name="Versions of greet")).to_be_visible(timeout=WAIT_MS)
            expect(small.get_by_text("The file on disk is version")).to_be_visible(timeout=WAIT_MS)
            _shot(small, "1024-top")
            small.mouse.move(500, 400)
            small.mouse.wheel(0, 700)
            _shot(small, "1024-diff")
            small.goto(f"{url}/editor?flow=greet.yaml")
            expect(small.get_by_role("link", name="History")).to_have_count(
                2, timeout=WAIT_MS
            )  # the bar's, the toolbar's
            _shot(small, "1024-editor")
            small.goto(url)
            expect(small.get_by_role("link", name="History")).to_have_count(3, timeout=WAIT_MS)  # the bar's, two cards'
            _shot(small, "1024-home")
        finally:
            small.close()
