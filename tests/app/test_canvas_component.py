"""The flow canvas component in a real browser: it draws typed ports and sends every edit as an event.

The harness (canvas_harness.py) shows the events it received as JSON; each test does one thing on
the canvas and reads the events that arrived after it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from studio.app.canvas import assets_dir, sources_digest
from tests.app.browser import CHROMIUM, script_server
from tests.conftest import ROOT

HARNESS = Path(__file__).with_name("canvas_harness.py")
FRAME = 'iframe[title="studio.app.canvas.flow_canvas"]'
WAIT_MS = 20_000


def test_committed_build_matches_sources() -> None:
    """Rebuild after changing the frontend: cd studio/app/canvas/frontend && npm ci && npm run build."""
    assert (assets_dir() / "SOURCES.sha256").read_text().strip() == sources_digest()
    assert {"index.html", "main.js", "main.css"} <= {p.name for p in assets_dir().iterdir()}


browser_only = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium; .ci/run does)",
)


@pytest.fixture(scope="module")
def harness_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("canvas") / "streamlit.log"
    with script_server(HARNESS, log, os.environ | {"PYTHONPATH": str(ROOT)}) as url:
        yield url


@pytest.fixture(scope="module")
def errors() -> list[str]:
    """Errors the component's frame logged or threw, filled in by `page`."""
    return []


@pytest.fixture(scope="module")
def page(harness_url: str, errors: list[str], browser: Any) -> Iterator[Any]:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(harness_url)
    canvas(page).get_by_test_id("node-summarise").wait_for(timeout=WAIT_MS)
    yield page
    page.close()


def canvas(page: Any) -> Any:
    return page.frame_locator(FRAME)


def received(page: Any) -> list[dict[str, Any]]:
    """Every event the harness has processed, in order."""
    code = page.get_by_test_id("stCode")
    if code.count() == 0:
        return []
    return list(json.loads(code.first.inner_text()))


def events_after(page: Any, before: int, kind: str) -> list[dict[str, Any]]:
    """The events after the first `before`, once one of `kind` has arrived."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while time.monotonic() < deadline:
        new = received(page)[before:]
        if any(event["kind"] == kind for event in new):
            return new
        time.sleep(0.1)
    raise AssertionError(f"no {kind!r} event arrived; got {received(page)[before:]}")


def only(events: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    matching = [event for event in events if event["kind"] == kind]
    assert len(matching) == 1, events
    return matching[0]


def centre(locator: Any) -> tuple[float, float]:
    box = locator.bounding_box()
    assert box is not None
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def drag(page: Any, source: Any, target: Any, *, offset: tuple[float, float] = (0, 0)) -> None:
    """Press on `source`, move (in steps, as a hand does) to `target` plus `offset`, release."""
    x, y = centre(source)
    tx, ty = centre(target)
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(tx + offset[0], ty + offset[1], steps=12)
    page.mouse.up()


@browser_only
def test_nodes_and_typed_ports_render(page: Any) -> None:
    frame = canvas(page)
    for node in ("$inputs", "summarise", "headline", "$outputs"):
        assert frame.get_by_test_id(f"node-{node}").is_visible()
    for port in ("summarise-in-article", "summarise-in-temperature", "summarise-out-text", "$inputs-out-topic",
                 "$inputs-out-+", "$outputs-in-title", "$outputs-in-+", "headline-in-+"):  # fmt: skip
        assert frame.get_by_test_id(f"port-{port}").count() == 1, port
    summarise = frame.get_by_test_id("node-summarise")
    assert "article" in summarise.inner_text() and ": float" in summarise.inner_text()
    assert "unknown variable 'x'" in frame.get_by_test_id("node-headline").inner_text()
    assert frame.get_by_test_id("cause-summarise").inner_text() == "likely cause"
    assert (
        "is-cause" in (summarise.get_attribute("class") or "") and frame.get_by_test_id("cause-headline").count() == 0
    )
    assert frame.locator(".react-flow__edge").count() == 1
    assert frame.get_by_test_id("canvas-redo").is_disabled()


@browser_only
def test_dragging_output_to_input_sends_connect(page: Any) -> None:
    frame = canvas(page)
    before = len(received(page))
    drag(page, frame.get_by_test_id("port-summarise-out-text"), frame.get_by_test_id("port-headline-in-summary"))
    event = only(events_after(page, before, "connect"), "connect")
    assert event | {"seq": 0} == {"seq": 0, "kind": "connect", "source": "summarise", "sourceHandle": "text",
                                  "target": "headline", "targetHandle": "summary"}  # fmt: skip
    sync_api = pytest.importorskip("playwright.sync_api")
    sync_api.expect(frame.get_by_test_id("canvas-message")).to_contain_text("summarise.text -> headline.summary")
    assert frame.locator(".react-flow__edge").count() == 1  # no local edge: Python decides


@browser_only
def test_dragging_onto_the_add_port_names_it_plus(page: Any) -> None:
    frame = canvas(page)
    before = len(received(page))
    drag(page, frame.get_by_test_id("port-headline-out-text"), frame.get_by_test_id("port-$outputs-in-+"))
    event = only(events_after(page, before, "connect"), "connect")
    assert (event["source"], event["sourceHandle"], event["target"], event["targetHandle"]) == (
        "headline", "text", "$outputs", "+"
    )  # fmt: skip


@browser_only
def test_palette_click_sends_add_node_and_the_new_version_shows_it(page: Any) -> None:
    frame = canvas(page)
    frame.get_by_test_id("palette-search").fill("jinja")
    assert frame.get_by_test_id("palette-item-llm.generate").count() == 0
    before = len(received(page))
    frame.get_by_test_id("palette-item-text.template").click()
    event = only(events_after(page, before, "add_node"), "add_node")
    assert event["type"] == "text.template"
    assert isinstance(event["x"], int) and isinstance(event["y"], int)
    frame.get_by_test_id("node-text.template-1").wait_for(timeout=WAIT_MS)
    frame.get_by_test_id("palette-search").fill("")


@browser_only
def test_dropping_a_palette_entry_adds_it_there(page: Any) -> None:
    frame = canvas(page)
    before = len(received(page))
    frame.get_by_test_id("palette-item-control.merge").drag_to(frame.locator(".react-flow__pane"))
    event = only(events_after(page, before, "add_node"), "add_node")
    assert event["type"] == "control.merge"
    frame.get_by_test_id("node-control.merge-2").wait_for(timeout=WAIT_MS)


@browser_only
def test_dragging_a_node_sends_move(page: Any) -> None:
    frame = canvas(page)
    header = frame.get_by_test_id("node-summarise").locator(".fc-node-header")
    y_before = centre(header)[1]
    before = len(received(page))
    drag(page, header, header, offset=(0, 150))
    y_dropped = centre(header)[1]
    assert y_dropped > y_before + 100
    new = events_after(page, before, "move")
    positions = only(new, "move")["positions"]
    assert set(positions) == {"summarise"} and positions["summarise"]["y"] > 0
    assert only(new, "select")["node"] == "summarise"  # dragging selects
    time.sleep(0.5)  # the harness has rerun with the new version: the node stays where it was dropped
    assert centre(header)[1] == pytest.approx(y_dropped, abs=2)


@browser_only
def test_selecting_a_node_and_pressing_delete_sends_delete(page: Any) -> None:
    frame = canvas(page)
    before = len(received(page))
    frame.get_by_test_id("node-headline").locator(".fc-node-header").click()
    assert only(events_after(page, before, "select"), "select")["node"] == "headline"
    page.keyboard.press("Delete")
    event = only(events_after(page, before, "delete"), "delete")
    assert (event["nodes"], event["edges"]) == (["headline"], [])


@browser_only
def test_special_nodes_are_never_deleted_and_undo_button_sends_undo(page: Any) -> None:
    frame = canvas(page)
    before = len(received(page))
    frame.get_by_test_id("node-$inputs").locator(".fc-node-header").click()
    events_after(page, before, "select")
    page.keyboard.press("Delete")
    frame.get_by_test_id("canvas-undo").click()
    new = events_after(page, before, "undo")
    assert [event["kind"] for event in new] == ["select", "undo"]  # Delete on $inputs sent nothing


@browser_only
def test_the_component_logged_no_errors(page: Any, errors: list[str]) -> None:
    assert errors == []
