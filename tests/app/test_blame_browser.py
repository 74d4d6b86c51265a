"""Experiments speak plainly, in a real browser: the batch form offers a limit and a model override;
"Find the culprits" shows its progress (examples blamed of the failing ones, calls of the budget)
while it runs, then the culprits with what their numbers mean; a selected blame shows what it found,
not a batch's "Score —, 0 of 0 examples"; a search refused for its budget says in words what it
needs and starts with that budget from a button. Screenshots at 1440x900 and 1024x768 go to
test-artifacts/experiments-plain-*.png."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from studio.app import launches
from studio.store import SQLiteStore
from tests.app.browser import CHROMIUM, choose, settled, studio_server
from tests.conftest import FLOWSTUDIO, ROOT
from tests.optimize.conftest import HALF_RULES, MakeTask

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install -e '.[dev]')")
ARTIFACTS = ROOT / "test-artifacts"
WAIT_MS = 60_000
BLAMING = re.compile(r"\d of 3 failing examples blamed · [1-9]\d* of 200 model calls")
"""A running blame's progress, its calls already counting."""


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"experiments-plain-{name}.png"))


def _end_launches(db: Path) -> None:
    """Stop what the page started that may still run (a detached search), by its process group."""
    for launch in launches.launches(db):
        if launches.alive(launch.pid):
            try:
                os.killpg(launch.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                continue


def _batch(page: Any) -> None:
    """Start a batch of the first 6 dev examples from the form, its limit and model override shown."""
    expect = sync_api.expect
    expect(page.get_by_role("tab", name="Batch evaluation")).to_be_visible(timeout=WAIT_MS)
    choose(page, "Dataset", "dev.jsonl")
    expect(page.get_by_text("Model for default", exact=False)).to_be_visible(timeout=WAIT_MS)
    choose(page, "Metric", "exact")
    limit = page.get_by_role("spinbutton", name="Limit (first N examples)")
    limit.fill("6")
    limit.press("Enter")
    expect(limit).to_have_value("6", timeout=WAIT_MS)
    settled(page)
    shot(page, "1-batch-form")
    page.get_by_role("button", name="Start batch").click()


def _find_culprits(page: Any, db: Path, tries: int = 3) -> None:
    """Click "Find the culprits" until the studio has started the blame: a click that lands while the
    page reruns (the batch's end drops the refresh timer) can be lost with the button it hit."""
    for _ in range(tries):
        settled(page)
        page.get_by_role("button", name="Find the culprits").click()
        for _ in range(50):
            if any(launch.kind == "blame" for launch in launches.launches(db)):
                return
            page.wait_for_timeout(100)
    raise AssertionError(f"'Find the culprits' started no blame in {tries} clicks")


def test_blame_progress_budget_words_blame_header_and_batch_form(
    browser: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    expect = sync_api.expect
    task = make_task(HALF_RULES.replace("reply:", "delay_s: 0.3, reply:"), dev=8)
    db = tmp_path / "flowstudio.db"
    with studio_server(FLOWSTUDIO, task.folder, db, tmp_path / "studio.log") as (url, _):
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        try:
            page.goto(f"{url}/experiments")
            _batch(page)
            badge = page.get_by_test_id("stMarkdownContainer").get_by_text("finished", exact=True)
            expect(badge.first).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_text("Examples (6 runs", exact=False)).to_be_visible()  # the limit held
            _find_culprits(page, db)
            expect(page.get_by_test_id("stProgress").get_by_text(BLAMING)).to_be_visible(
                timeout=WAIT_MS
            )  # while it runs
            shot(page, "2-blame-running")
            expect(page.get_by_text("Likely culprits")).to_be_visible(timeout=WAIT_MS)
            page.get_by_text("Likely culprits").scroll_into_view_if_needed()
            expect(page.get_by_text("interval: the range", exact=False)).to_be_visible()  # what the numbers mean
            shot(page, "3-culprits")

            store = SQLiteStore(db)
            try:
                blame = store.list_experiments(limit=1, kind="blame")[0]
            finally:
                store.close()
            page.mouse.wheel(0, -3000)
            choose(page, "Experiment", f"{blame.experiment_id} · blame · {blame.flow}")
            expect(page.get_by_test_id("stMetric").filter(has_text="Failing examples blamed")).to_contain_text(
                "3 of 3", timeout=WAIT_MS
            )
            expect(page.get_by_test_id("stMetric").filter(has_text="Score")).to_have_count(0)
            expect(page.get_by_text("0 of 0", exact=False)).to_have_count(0)
            shot(page, "4-blame-header")

            page.get_by_text("Start a batch or a search").click()
            page.get_by_role("tab", name="Optimizer search").click()
            choose(page, "Train set", "train.jsonl")
            choose(page, "Dev set", "dev.jsonl")
            budget = page.get_by_label("Budget (model calls)")
            budget.fill("1")
            budget.press("Enter")
            expect(budget).to_have_value("1", timeout=WAIT_MS)
            settled(page)
            page.get_by_role("button", name="Start search").click()
            refusal = page.get_by_text(re.compile(r"did not start: a budget of 1 model call is too small"))
            expect(refusal).to_be_visible(timeout=WAIT_MS)
            assert "--budget-calls" not in page.get_by_test_id("stAlert").filter(has=refusal).inner_text()
            offer = page.get_by_role("button", name=re.compile(r"Start it with \d+ calls"))
            needed = int(re.search(r"\d+", offer.inner_text()).group())  # type: ignore[union-attr]
            refusal.scroll_into_view_if_needed()
            page.wait_for_timeout(500)
            shot(page, "5-budget-refused")
            page.set_viewport_size({"width": 1024, "height": 768})
            refusal.scroll_into_view_if_needed()
            page.wait_for_timeout(500)
            shot(page, "6-budget-refused-1024")
            offer.click()
            expect(refusal).to_have_count(0, timeout=WAIT_MS)
            progress = page.get_by_test_id("stProgress").get_by_text(re.compile(rf"of {needed} calls"))
            expect(progress).to_be_visible(timeout=WAIT_MS)
            shot(page, "7-search-with-that-budget-1024")
        finally:
            page.close()
            _end_launches(db)
