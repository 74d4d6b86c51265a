"""The review queue in a real browser: five runs reviewed with the keyboard (good, bad, skip, one
correction typed in place), then the dataset exported and its rows shown."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from studio.reviews.queue import EVERY_RUN
from studio.store import SQLiteStore
from tests.app.browser import CHROMIUM, choose, settled, studio_server
from tests.app.review_seed import seed_reviews
from tests.conftest import FLOWSTUDIO, ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install -e '.[dev]')")
ARTIFACTS = ROOT / "test-artifacts"
WAIT_MS = 20_000
FLOWS = Path(__file__).with_name("flows")


@pytest.fixture(scope="module")
def reviews(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path, dict[str, str]]]:
    """The studio over a folder copy of the test flows and a store of five chain runs and a failed one."""
    folder = tmp_path_factory.mktemp("reviews")
    flows = shutil.copytree(FLOWS, folder / "flows")
    db = folder / "flowstudio.db"
    runs = seed_reviews(db)
    with studio_server(FLOWSTUDIO, flows, db, folder / "studio.log") as (url, _):
        yield url, folder, db, runs


def _press(page: Any, key: str, left: int, said: str) -> None:
    """Press a key with no field focused; the queue shrinks to `left` and the page says `said`."""
    expect = sync_api.expect
    settled(page)
    page.keyboard.press(key)
    expect(page.get_by_text(f"{left} run{'s' if left != 1 else ''} to review")).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_test_id("stAlert").first).to_contain_text(said, timeout=WAIT_MS)


def test_five_runs_reviewed_with_the_keyboard_then_exported(
    reviews: tuple[str, Path, Path, dict[str, str]], browser: Any
) -> None:
    url, folder, db, runs = reviews
    expect = sync_api.expect
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        page.goto(f"{url}/reviews?flow=chain")
        expect(page.get_by_role("heading", name="Reviews", exact=True)).to_be_visible(timeout=WAIT_MS)
        choose(page, "Needs review", EVERY_RUN)
        expect(page.get_by_text("5 runs to review")).to_be_visible(timeout=WAIT_MS)
        form = page.locator(".st-key-review_form")
        expect(form).to_contain_text(runs["fog"])
        expect(form.get_by_role("link", name="Open trace")).to_have_attribute("href", f"traces?run={runs['fog']}")
        settled(page)  # a rerun's stale copy of the form leaves a second "headline" field until it ends
        headline = form.get_by_label("headline")
        expect(headline).to_have_count(1, timeout=WAIT_MS)
        headline.click()
        headline.fill("FOG LIFTS BY NOON!")  # g, b and s typed in a field stay text
        page.keyboard.press("Escape")
        form.get_by_label("Comment").click()
        page.keyboard.type("gloomy topic, bright headline")
        page.keyboard.press("Escape")
        _press(page, "b", 4, f"Reviewed {runs['fog']}: bad, corrected headline.")
        _press(page, "s", 4, f"Skipped {runs['wind']}")
        _press(page, "g", 3, f"Reviewed {runs['snow']}: good.")
        _press(page, "g", 2, f"Reviewed {runs['rain']}: good.")
        _press(page, "b", 1, f"Reviewed {runs['sun']}: bad.")
        expect(form).to_contain_text(runs["wind"])  # the skipped run comes back last
        _press(page, "g", 0, f"Reviewed {runs['wind']}: good.")
        expect(page.get_by_text("Nothing to review here")).to_be_visible(timeout=WAIT_MS)
        ARTIFACTS.mkdir(exist_ok=True)
        page.get_by_role("button", name="Export dataset").click()
        written = folder / "flows" / "chain-reviewed.jsonl"
        expect(page.get_by_text(f"Wrote 4 reviewed rows of chain to {written}")).to_be_visible(timeout=WAIT_MS)
        grid = page.get_by_test_id("stDataFrame").last
        expect(grid).to_be_visible(timeout=WAIT_MS)
        page.screenshot(path=str(ARTIFACTS / "reviews-export.png"), full_page=True)
        rows = [json.loads(line) for line in written.read_text(encoding="utf-8").splitlines()]
    finally:
        page.close()
    assert {r["run_id"]: r["headline"] for r in rows} == {
        runs["fog"]: "FOG LIFTS BY NOON!", runs["snow"]: "SUNNY DAYS AHEAD!",
        runs["rain"]: "SUNNY DAYS AHEAD!", runs["wind"]: "SUNNY DAYS AHEAD!",
    }  # fmt: skip
    store = SQLiteStore(db)
    try:
        (fog,) = store.feedback(runs["fog"])
        assert (fog.value, fog.comment, fog.correction) == (
            "bad",
            "gloomy topic, bright headline",
            {"headline": "FOG LIFTS BY NOON!"},
        )
        assert [f.value for f in store.feedback(runs["wind"])] == ["good"]  # skipping stored nothing
    finally:
        store.close()
