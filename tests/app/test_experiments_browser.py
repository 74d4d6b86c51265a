"""The Experiments page in a real browser: start a batch, watch it move, reload, stop it,
start another and read its results; start a search, watch its calls rise, reload it mid-run
and read its candidates (screenshots at 1440x900 in test-artifacts/)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.app.browser import CHROMIUM, choose, studio_server
from tests.app.launch_seed import slow_folder
from tests.conftest import FLOWSTUDIO, ROOT
from tests.optimize.conftest import DEMO_RULES, MakeTask

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install -e '.[dev]')")
ARTIFACTS = ROOT / "test-artifacts"
WAIT_MS = 30_000
PROGRESS = re.compile(r"(\d+) of 40 examples")
CALLS = re.compile(r"(\d+) of 160 calls")


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"experiments-{name}.png"))


def _done(page: Any, pattern: re.Pattern[str] = PROGRESS) -> int:
    """Examples done (or calls spent), read from the progress bar's text."""
    text = page.get_by_test_id("stProgress").inner_text(timeout=WAIT_MS)
    match = pattern.search(text)
    assert match, text
    return int(match.group(1))


def _start(page: Any, concurrency: int) -> None:
    expect = sync_api.expect
    forms = page.get_by_test_id("stExpander").locator("details").first  # open on a first visit
    expect(forms).to_be_visible(timeout=WAIT_MS)
    if forms.get_attribute("open") is None:
        page.get_by_text("Start a batch or a search").click()
    box = page.get_by_label("Concurrency")
    box.fill(str(concurrency))
    box.press("Enter")
    expect(box).to_have_value(str(concurrency), timeout=WAIT_MS)
    page.get_by_role("button", name="Start batch").click()


def _stop(page: Any) -> None:
    """Click Stop (again if a refresh of the page swallowed the click) until the page says stopped."""
    stopped = page.get_by_text("Stopped before the end")
    for _ in range(3):
        page.get_by_role("button", name="Stop").click()
        try:
            sync_api.expect(stopped).to_be_visible(timeout=5_000)
            return
        except AssertionError:
            continue
    sync_api.expect(stopped).to_be_visible(timeout=WAIT_MS)


def test_start_watch_reload_stop_and_read_a_batch(browser: Any, tmp_path: Path) -> None:
    expect = sync_api.expect
    (tmp_path / "flows").mkdir()
    folder = slow_folder(tmp_path / "flows", delay_s=0.4, copies=10)
    db = tmp_path / "flowstudio.db"
    with studio_server(FLOWSTUDIO, folder, db, tmp_path / "studio.log") as (url, _):
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        try:
            page.goto(f"{url}/experiments")
            expect(page.get_by_role("heading", name="Experiments")).to_be_visible(timeout=WAIT_MS)
            _start(page, 1)
            expect(page.get_by_test_id("stProgress")).to_be_visible(timeout=WAIT_MS)
            first = _done(page)
            _shot(page, "1-running")
            page.wait_for_timeout(2500)
            second = _done(page)
            assert second > first, "the progress moves without a click"
            page.reload()
            expect(page.get_by_test_id("stProgress")).to_be_visible(timeout=WAIT_MS)
            assert _done(page) >= second, "after a reload the page shows the same run, still going"
            _shot(page, "2-after-reload")
            _stop(page)
            expect(page.get_by_role("button", name="Stop")).to_have_count(0, timeout=WAIT_MS)
            _shot(page, "3-stopped")
            _start(page, 8)
            badge = page.get_by_test_id("stMarkdownContainer").get_by_text("finished", exact=True)
            expect(badge.first).to_be_visible(timeout=60_000)
            expect(page.get_by_test_id("stMetric").filter(has_text="Score")).to_be_visible(timeout=WAIT_MS)
            _shot(page, "4-finished")
            page.mouse.wheel(0, 600)
            page.wait_for_timeout(500)
            _shot(page, "5-results-table")
            score = page.get_by_test_id("stMetric").filter(has_text="Score").inner_text()
            assert "0.500" in score  # 2 of the 4 rows are right (exact), repeated 10 times
            page.mouse.wheel(0, -2000)
            page.get_by_role("tab", name="Optimizer search").click()
            expect(page.get_by_role("button", name="Start search")).to_be_visible(timeout=WAIT_MS)
            _shot(page, "6-search-form")
        finally:
            page.close()


def _rises(page: Any, pattern: re.Pattern[str], first: int, timeout_s: float = 20) -> None:
    """The figure in the progress bar rises above `first` within `timeout_s`, without a click."""
    for _ in range(int(timeout_s * 2)):
        page.wait_for_timeout(500)
        if _done(page, pattern) > first:
            return
    raise AssertionError(f"the progress stayed at {first} for {timeout_s} s")


def test_start_watch_reload_and_read_a_search(browser: Any, make_task: MakeTask, tmp_path: Path) -> None:
    expect = sync_api.expect
    task = make_task(DEMO_RULES.replace("reply:", "delay_s: 0.3, reply:"))
    db = tmp_path / "flowstudio.db"
    with studio_server(FLOWSTUDIO, task.folder, db, tmp_path / "studio.log") as (url, _):
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        try:
            page.goto(f"{url}/experiments")
            expect(page.get_by_role("heading", name="Experiments")).to_be_visible(timeout=WAIT_MS)
            # nothing else to show yet: the start forms are open
            expect(page.get_by_role("tab", name="Optimizer search")).to_be_visible(timeout=WAIT_MS)
            page.get_by_role("tab", name="Optimizer search").click()
            choose(page, "Train set", "train.jsonl")
            choose(page, "Dev set", "dev.jsonl")
            choose(page, "Metric", "exact")
            budget = page.get_by_label("Budget (model calls)")
            budget.fill("160")
            budget.press("Enter")
            expect(budget).to_have_value("160", timeout=WAIT_MS)
            page.get_by_role("button", name="Start search").click()
            expect(page.get_by_test_id("stProgress")).to_be_visible(timeout=WAIT_MS)
            first = _done(page, CALLS)
            _rises(page, CALLS, first)
            _shot(page, "7-search-running")
            page.reload()
            badge = page.get_by_test_id("stMarkdownContainer").get_by_text("finished", exact=True)
            expect(page.get_by_test_id("stProgress").or_(badge.first)).to_be_visible(timeout=WAIT_MS)
            expect(badge.first).to_be_visible(timeout=90_000)
            expect(page.get_by_text("Candidates", exact=True)).to_be_visible(timeout=WAIT_MS)
            diff = page.get_by_test_id("stCode").filter(has_text="demos:")
            expect(diff.first).to_be_visible(timeout=WAIT_MS)  # the chosen flow gained demos
            page.wait_for_timeout(1000)
            _shot(page, "8-search-finished")
            chart = page.get_by_text("Score versus", exact=False).first
            chart.scroll_into_view_if_needed()
            page.wait_for_timeout(500)
            _shot(page, "9-search-chart")
        finally:
            page.close()
