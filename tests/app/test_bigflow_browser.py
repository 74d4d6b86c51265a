"""Big flows in the Editor, in a real browser (issue 38, item 5): a 200-node chain opens readable on
its start (wrapped into rows), "go to node" centres and selects a far node, and a wheel notch zooms
by a small step. Screenshots at 1440x900 and 1024x768 go to test-artifacts/bigflow-*.png."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.app.browser import CHROMIUM, settled, studio_server
from tests.app.editor_browser import CANVAS_FRAME, WAIT_MS, canvas, chain_flow, confirmed
from tests.conftest import FLOWSTUDIO, ROOT

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install -e '.[dev]')")
ARTIFACTS = ROOT / "test-artifacts"
NODES = 200
READABLE_PX = 8
"""The least size of a card's text on screen when a flow opens."""
SMALLEST_TEXT = """() => Math.min(...[...document.querySelectorAll('.react-flow__node *')]
  .filter(e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
  .map(e => parseFloat(getComputedStyle(e).fontSize)))"""
"""The smallest font size (CSS pixels, before the zoom) of any text on a card drawn."""


@pytest.fixture(scope="module")
def flows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bigflow") / "flows"
    folder.mkdir()
    (folder / "chain.yaml").write_text(chain_flow(NODES), encoding="utf-8")  # no layout file: laid out on open
    (folder / "small.yaml").write_text(chain_flow(3), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, flows: Path) -> Iterator[str]:
    root = tmp_path_factory.mktemp("bigflow-server")
    with studio_server(FLOWSTUDIO, flows, root / "flowstudio.db", root / "studio.log") as (url, _):
        yield url


def _opened(browser: Any, server: str, width: int, height: int) -> Any:
    """A page on the Editor with the chain open, once its opening view is set."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(f"{server}/editor?flow=chain.yaml")
    settled(page)
    root = canvas(page).get_by_test_id("canvas-root")
    sync_api.expect(root).to_have_attribute("data-nodes", str(NODES + 2), timeout=WAIT_MS)
    sync_api.expect(canvas(page).get_by_test_id("node-c0")).to_be_in_viewport(timeout=WAIT_MS)
    page.wait_for_timeout(300)  # the opening view is set once the nodes are measured
    return page


def _zoom(page: Any) -> float:
    transform = canvas(page).locator(".react-flow__viewport").evaluate("e => getComputedStyle(e).transform")
    return float(re.match(r"matrix\(([-\d.e]+)", transform).group(1))  # type: ignore[union-attr]


def _pane(page: Any) -> dict[str, float]:
    box = canvas(page).locator(".react-flow").bounding_box()
    assert box is not None
    return dict(box)


def _inside(box: dict[str, float] | None, pane: dict[str, float]) -> bool:
    return (
        box is not None
        and box["x"] >= pane["x"]
        and box["y"] >= pane["y"]
        and box["x"] + box["width"] <= pane["x"] + pane["width"]
        and box["y"] + box["height"] <= pane["y"] + pane["height"]
    )


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"bigflow-{name}.png"))


def test_a_200_node_chain_opens_readable_on_its_start_goes_to_a_node_and_zooms_in_small_steps(
    browser: Any, server: str
) -> None:
    page = _opened(browser, server, 1440, 900)
    frame, pane = canvas(page), _pane(page)
    zoom = _zoom(page)
    smallest = frame.locator(".react-flow__node").first.evaluate(SMALLEST_TEXT)
    assert smallest * zoom >= READABLE_PX, (smallest, zoom)  # not a dotted line
    for start in ("$inputs", "c0", "c1"):
        assert _inside(frame.get_by_test_id(f"node-{start}").bounding_box(), pane), start
    inputs, second, third = (frame.get_by_test_id(f"node-{n}").bounding_box() for n in ("$inputs", "c1", "c2"))
    assert inputs and second and third and second["x"] > inputs["x"]
    assert third["y"] > inputs["y"] + inputs["height"] and third["x"] < second["x"]  # wrapped: c2 starts row two
    assert frame.locator(".react-flow__minimap").count() == 1
    _shot(page, "1440-open")

    frame.get_by_test_id("canvas-goto").fill("c150")
    frame.get_by_test_id("canvas-goto").press("Enter")
    far = frame.get_by_test_id("node-c150")
    sync_api.expect(far).to_have_class(re.compile(r"\bis-selected\b"), timeout=WAIT_MS)
    sync_api.expect(page.get_by_role("heading", name="c150")).to_be_visible(timeout=WAIT_MS)  # its Inspector
    page.wait_for_timeout(300)  # the view's move
    box, pane = far.bounding_box(), _pane(page)
    assert box is not None
    centre = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    middle = (pane["x"] + pane["width"] / 2, pane["y"] + pane["height"] / 2)
    assert abs(centre[0] - middle[0]) < 40 and abs(centre[1] - middle[1]) < 40, (centre, middle)
    assert _zoom(page) * smallest >= READABLE_PX
    _shot(page, "1440-goto")

    frame.get_by_test_id("canvas-goto").fill("no-such-node")
    frame.get_by_test_id("canvas-goto").press("Enter")
    sync_api.expect(frame.get_by_test_id("canvas-goto")).to_have_attribute("aria-invalid", "true")

    page.mouse.move(middle[0] + 5, pane["y"] + 20)  # over the pane, between cards
    for delta in (100, 600, -100, -600):  # a notch, and a coarse wheel's fast turn
        before = _zoom(page)
        page.mouse.wheel(0, delta)
        page.wait_for_timeout(150)
        ratio = _zoom(page) / before
        assert ratio != 1 and max(ratio, 1 / ratio) <= 1.2, (delta, before, ratio)
    page.close()


CUT_CARDS = """rf => {
  const pane = rf.getBoundingClientRect();
  return [...rf.querySelectorAll('.react-flow__node')].map(n => [n.dataset.id, n.getBoundingClientRect()])
    .filter(([, b]) => b.top >= pane.top && b.bottom <= pane.bottom && b.right > pane.left && b.left < pane.right)
    .filter(([, b]) => b.left < pane.left || b.right > pane.right).map(([id]) => id);
}"""
"""Cards whose whole height is in the pane but that the pane's left or right side cuts."""


def _whole_rows(page: Any) -> list[str]:
    """Wait (up to WAIT_MS) until no card of the rows in view is cut at the pane's sides; the cut ones."""
    cut: list[str] = []
    for _ in range(WAIT_MS // 250):
        cut = canvas(page).locator(".react-flow").evaluate(CUT_CARDS)
        if not cut:
            break
        page.wait_for_timeout(250)
    return cut


def test_at_1024x768_the_chain_opens_readable_in_rows_as_wide_as_the_pane(browser: Any, server: str) -> None:
    page = _opened(browser, server, 1024, 768)
    frame = canvas(page)
    assert _whole_rows(page) == []  # the rows laid out again for this pane, not cut at 1440's width
    page.wait_for_timeout(300)  # the view set on the new rows
    pane = _pane(page)
    smallest = frame.locator(".react-flow__node").first.evaluate(SMALLEST_TEXT)
    assert smallest * _zoom(page) >= READABLE_PX, (smallest, _zoom(page))
    for start in ("$inputs", "c0", "c1"):
        assert _inside(frame.get_by_test_id(f"node-{start}").bounding_box(), pane), start
    assert frame.get_by_test_id("canvas-goto").is_visible()
    assert page.get_by_text("Unsaved changes").count() == 0  # laid out again, not edited
    _shot(page, "1024-open")
    page.close()


def test_a_node_added_on_the_chain_keeps_the_zoom_and_shows_near_the_selected_card(
    browser: Any, server: str, flows: Path
) -> None:
    for width, height in ((1440, 900), (1024, 768)):
        page = _opened(browser, server, width, height)
        frame = canvas(page)
        _whole_rows(page)
        page.wait_for_timeout(300)
        frame.get_by_test_id("node-c4").click(position={"x": 40, "y": 12})  # at 1024, beside it is the minimap
        sync_api.expect(page.get_by_role("heading", name="c4")).to_be_visible(timeout=WAIT_MS)
        settled(page)
        if not frame.get_by_test_id("palette-item-text.template").is_visible():  # closed in a narrow frame
            frame.get_by_test_id("palette-toggle").click()
            page.wait_for_timeout(300)
        before = _zoom(page)
        frame.get_by_test_id("palette-item-text.template").click()
        added = frame.get_by_test_id("node-template")
        sync_api.expect(added).to_be_visible(timeout=WAIT_MS)
        confirmed(page)
        page.wait_for_timeout(500)  # the view's move, and the frame's resize after the Inspector's rerun
        smallest = frame.locator(".react-flow__node").first.evaluate(SMALLEST_TEXT)
        assert abs(_zoom(page) - before) < 1e-3 and smallest * _zoom(page) >= READABLE_PX, (before, _zoom(page))
        box, minimap = added.bounding_box(), frame.locator(".react-flow__minimap").bounding_box()
        assert _inside(box, _pane(page)) and box is not None and minimap is not None
        assert box["x"] + box["width"] <= minimap["x"] or box["y"] + box["height"] <= minimap["y"]  # not under it
        _shot(page, f"{width}-added")
        page.close()
        for draft in flows.glob(".*.draft.yaml"):  # the next page opens the file, not this page's edits
            draft.unlink()


def test_the_canvas_stays_put_when_the_first_edit_answers_the_draft_offer(
    browser: Any, server: str, flows: Path
) -> None:
    """A flow reopened with a draft offers it above the canvas; the first edit drops the offer, but
    its row stays (one line), and "Unsaved changes" fits the toolbar: the canvas frame does not move."""
    for width, height in ((1440, 900), (1024, 768)):
        draft = flows / ".small.draft.yaml"
        draft.write_text(chain_flow(3).replace("{{ text }} 1", "{{ text }} one"), encoding="utf-8")
        page = browser.new_page(viewport={"width": width, "height": height})
        page.goto(f"{server}/editor?flow=small.yaml")
        sync_api.expect(page.get_by_text("has unsaved edits from an earlier visit")).to_be_visible(timeout=WAIT_MS)
        sync_api.expect(canvas(page).get_by_test_id("node-c0")).to_be_visible(timeout=WAIT_MS)
        settled(page)
        frame = page.locator(CANVAS_FRAME)
        before = frame.bounding_box()
        _shot(page, f"{width}-draft-offered")
        if not canvas(page).get_by_test_id("palette-item-text.template").is_visible():
            canvas(page).get_by_test_id("palette-toggle").click()
        canvas(page).get_by_test_id("palette-item-text.template").click()
        sync_api.expect(page.get_by_text("draft was replaced by your edits")).to_be_visible(timeout=WAIT_MS)
        sync_api.expect(page.get_by_text("Unsaved changes")).to_be_visible(timeout=WAIT_MS)
        settled(page)
        after = page.locator(CANVAS_FRAME).bounding_box()
        _shot(page, f"{width}-draft-answered")
        assert before is not None and after is not None and abs(after["y"] - before["y"]) < 1, (width, before, after)
        page.close()
        draft.unlink(missing_ok=True)
