"""The studio in a real browser: from Home to the runs list, to a failed node and its cause; HTML stays text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.app.browser import CHROMIUM, choose, listening_addresses, settled, studio_server
from tests.app.seed import FLOWS
from tests.conftest import FLOWSTUDIO, ROOT

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium; .ci/run does)",
)
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install -e '.[dev]')")
ARTIFACTS = ROOT / "test-artifacts"
WAIT_MS = 20_000
LOOPBACK_HEX = "0100007F"  # 127.0.0.1 as /proc/net/tcp writes it


@pytest.fixture(scope="module")
def server(seeded: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    log = tmp_path_factory.mktemp("server") / "studio.log"
    with studio_server(FLOWSTUDIO, FLOWS, seeded[0], log) as running:
        yield running


def test_server_listens_on_loopback_only(server: tuple[str, int]) -> None:
    url, _ = server
    port = int(url.rsplit(":", 1)[1])
    assert listening_addresses(port) == {f"{LOOPBACK_HEX}"}


def test_from_runs_list_to_failed_node_and_its_cause(
    server: tuple[str, int], browser: Any, seeded: tuple[Path, dict[str, str]]
) -> None:
    url, _ = server
    expect = sync_api.expect
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    try:
        page.goto(url)  # the studio opens on Home; the navigation bar leads to the runs list
        expect(page.get_by_role("heading", name="Flowstudio")).to_be_visible(timeout=WAIT_MS)
        page.get_by_role("link", name="Runs", exact=True).click()
        expect(page.get_by_role("heading", name="Runs")).to_be_visible(timeout=WAIT_MS)
        choose(page, "Flow", "failing")
        expect(page.get_by_text("2 runs match")).to_be_visible(timeout=WAIT_MS)
        choose(page, "Status", "failed")
        expect(page.get_by_text("2 runs match")).to_be_visible(timeout=WAIT_MS)
        page.get_by_role("link", name="Open trace").click()
        expect(page.get_by_role("heading", name="Traces")).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_text("Failing node:")).to_contain_text("answer", timeout=WAIT_MS)
        # an auth error points at the node's model settings (issue 20), its healthy upstream node is named as such
        expect(page.locator("p", has_text="Look first at:")).to_contain_text("model settings of answer")
        choose(page, "Node", "draft")
        settled(page)  # the last node's panel can linger while the rerun draws this one: two "Outputs"
        expect(page.get_by_role("tabpanel").get_by_text("Outputs").first).to_be_visible(timeout=WAIT_MS)
        choose(page, "Node", "answer")
        panel = page.get_by_role("tabpanel").first
        expect(panel.get_by_text("scripted auth error").first).to_be_visible(timeout=WAIT_MS)
        stored = page.get_by_text("<script>window.__pwned = 1</script>", exact=False).first
        expect(stored).to_be_visible()
        assert page.evaluate("window.__pwned") is None  # shown as text, never run
        assert page.locator("b", has_text="bold").count() == 0
        page.get_by_role("tab", name="Cost").click()  # drawn when opened, and named in the URL
        expect(page.get_by_text("total of model calls")).to_be_visible(timeout=WAIT_MS)
        assert page.evaluate("new URL(location.href).searchParams.get('tab')") == "Cost"
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "trace-failed-run.png"), full_page=True)
    finally:
        page.close()
