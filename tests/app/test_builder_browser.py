"""The Editor as a builder, in a real browser at 1440x900: the canvas fills the window, flows open
readable, the canvas shows what the YAML says, the inspector edits (and refuses) node settings,
and the keyboard and context menu work. Screenshots go to test-artifacts/builder-*.png."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from studio.editor.files import flow_files
from studio.flow.spec import load_flow
from tests.app.browser import CHROMIUM, choose, studio_server
from tests.app.editor_browser import WAIT_MS, big_flow, canvas, chain_flow, fill_prompt
from tests.conftest import FIXTURES, FLOWS, FLOWSTUDIO, ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install -e '.[dev]')")
ARTIFACTS = ROOT / "test-artifacts"
WIDTH, HEIGHT = 1440, 900
STREAMED = "one two three four five six seven eight"
"""A scripted reply streamed a word every half second (streaming.yaml)."""
BROKEN = """flowstudio: 1
name: broken
inputs:
  text: {type: str}
outputs:
  text: $shout.text
nodes:
  shout:
    type: text.template
    when: nosuch.value == 1
    inputs: {text: $inputs.text}
    config: {template: "{{ text }}!"}
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    flows = Path(shutil.copytree(FLOWS, tmp_path_factory.mktemp("builder") / "flows"))
    (flows / "big.yaml").write_text(big_flow(200), encoding="utf-8")
    (flows / "mid.yaml").write_text(big_flow(150).replace("name: big", "name: mid"), encoding="utf-8")
    (flows / "ten.yaml").write_text(chain_flow(10).replace("name: chain", "name: ten"), encoding="utf-8")
    (flows / "five.yaml").write_text(chain_flow(5).replace("name: chain", "name: five"), encoding="utf-8")
    (flows / "broken.yaml").write_text(BROKEN, encoding="utf-8")
    shutil.copy(FIXTURES / "commented.yaml", flows / "commented.yaml")
    shutil.copy(FIXTURES / "route-guarded.yaml", flows / "route-guarded.yaml")  # routing by `when:` guards
    failing = (FIXTURES / "commented.yaml").read_text(encoding="utf-8").replace("name: commented", "name: refusing")
    failing = failing.replace("[{reply: ok}]", "[{error: {kind: auth}}]")
    (flows / "refusing.yaml").write_text(failing, encoding="utf-8")
    slow = (FIXTURES / "commented.yaml").read_text(encoding="utf-8").replace("name: commented", "name: streaming")
    slow = slow.replace("[{reply: ok}]", f"[{{word_delay_s: 0.5, reply: {STREAMED!r}}}]")
    (flows / "streaming.yaml").write_text(slow, encoding="utf-8")
    approve = (FLOWS / "approve-reply.yaml").read_text(encoding="utf-8").replace("name: approve-reply", "name: approve")
    approve = approve.replace(
        "{model: local/smollm2, temperature: 0, max_tokens: 60}", "{model: scripted, script: [{reply: Sure.}]}"
    )
    (flows / "approve.yaml").write_text(approve, encoding="utf-8")
    return flows


@pytest.fixture(scope="module")
def server(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("builder-server")
    with studio_server(FLOWSTUDIO, folder, root / "flowstudio.db", root / "studio.log") as (url, _):
        yield url


@pytest.fixture
def page(browser: Any, server: str, request: pytest.FixtureRequest) -> Iterator[Any]:
    opened = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    opened.goto(f"{server}/editor")
    sync_api.expect(canvas(opened).get_by_test_id("canvas-root")).to_be_visible(timeout=WAIT_MS)
    try:
        yield opened
    finally:
        shot(opened, f"end-{request.node.name}")
        opened.close()


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"builder-{name}.png"))


def open_flow(page: Any, path: Path) -> None:
    choose(page, "Flow", str(path.relative_to(path.parent)))
    nodes = load_flow(path).spec.nodes
    root = canvas(page).get_by_test_id("canvas-root")
    sync_api.expect(root).to_have_attribute("data-nodes", str(len(nodes) + 2), timeout=WAIT_MS)
    sync_api.expect(canvas(page).get_by_test_id(f"node-{next(iter(nodes))}")).to_be_attached(timeout=WAIT_MS)
    page.wait_for_timeout(600)  # the opening view is set once the nodes are measured


def frame_box(page: Any) -> dict[str, float]:
    box = page.locator('[data-stale="false"] iframe[title="studio.app.canvas.flow_canvas"]').bounding_box()
    assert box is not None
    return dict(box)


def zoom(page: Any) -> float:
    transform = canvas(page).locator(".react-flow__viewport").evaluate("e => getComputedStyle(e).transform")
    return float(re.match(r"matrix\(([-\d.e]+)", transform).group(1))  # type: ignore[union-attr]


def inside_window(box: dict[str, float] | None) -> bool:
    return box is not None and box["x"] >= 0 and box["y"] >= 0 and box["y"] + box["height"] <= HEIGHT


def test_the_canvas_fills_the_window_below_one_toolbar_and_panels_collapse(page: Any, folder: Path) -> None:
    open_flow(page, folder / "route-question.yaml")
    box = frame_box(page)
    assert box["width"] >= 0.7 * WIDTH, box
    assert box["y"] < 125 and box["y"] + box["height"] >= HEIGHT - 40, box  # one toolbar row above, down to the bottom
    assert page.evaluate("document.scrollingElement.scrollHeight") <= HEIGHT + 1  # nothing below the fold
    frame = canvas(page)
    for control in ("canvas-fit", "canvas-undo", "palette-toggle"):
        assert inside_window(frame.get_by_test_id(control).bounding_box()), control
    assert inside_window(frame.locator(".react-flow__controls").bounding_box())
    for button in ("Save", "Run", "New flow"):
        assert inside_window(page.get_by_role("button", name=button).bounding_box()), button
    shot(page, "layout")
    pane = frame.locator(".react-flow").bounding_box()["width"]
    frame.get_by_test_id("palette-toggle").click()
    sync_api.expect(frame.get_by_test_id("palette-search")).to_have_count(0)
    assert frame.locator(".react-flow").bounding_box()["width"] > pane + 150
    assert frame.locator(".react-flow").bounding_box()["width"] >= 0.7 * WIDTH
    page.get_by_test_id("stCheckbox").get_by_text("Panel", exact=True).click()  # the side panel's toggle
    sync_api.expect(page.get_by_role("radio", name="Playground")).to_have_count(0, timeout=WAIT_MS)
    page.wait_for_timeout(500)
    assert frame_box(page)["width"] >= 0.95 * (WIDTH - 40)
    shot(page, "panels-collapsed")


def test_small_flows_open_readable_and_big_ones_fit_with_a_minimap(page: Any, folder: Path) -> None:
    for name in ("draft-critique-revise.yaml", "summarise-reviews.yaml", "route-question.yaml", "approve-reply.yaml"):
        open_flow(page, folder / name)
        assert zoom(page) >= 0.75, name
        smallest = (
            canvas(page)
            .locator(".react-flow__node")
            .first.evaluate(
                """() => Math.min(...[...document.querySelectorAll('.react-flow__node *')]
                 .filter(e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
                 .map(e => parseFloat(getComputedStyle(e).fontSize)))"""
            )
        )
        assert smallest * zoom(page) >= 12, (name, smallest, zoom(page))
        count = len(load_flow(folder / name).spec.nodes) + 2
        assert canvas(page).locator(".react-flow__minimap").count() == (1 if count >= 8 else 0), name
    shot(page, "readable")
    open_flow(page, folder / "big.yaml")
    assert zoom(page) >= 0.7  # readable on its start, not whole as a dotted line (issue 38)
    assert canvas(page).locator(".react-flow__minimap").count() == 1  # big flows too (issue #19)
    bounds = canvas(page).locator(".react-flow__renderer").bounding_box()
    box = canvas(page).get_by_test_id("node-$inputs").bounding_box()
    assert box and bounds["x"] <= box["x"] and box["x"] + box["width"] <= bounds["x"] + bounds["width"] + 1
    assert bounds["y"] <= box["y"] and box["y"] + box["height"] <= bounds["y"] + bounds["height"] + 1
    shot(page, "big-flow")


NODES_OFF_SCREEN = """rf => {
  const pane = rf.getBoundingClientRect();
  const [z, , , , tx, ty] = getComputedStyle(rf.querySelector('.react-flow__viewport')).transform
    .match(/-?[\\d.e]+/g).map(Number);
  return [...rf.querySelectorAll('.react-flow__node')].filter(n => {
    const [x, y] = n.style.transform.match(/-?[\\d.]+/g).map(Number);  // translate(Xpx, Ypx): canvas pixels
    const left = x * z + tx, top = y * z + ty;
    return left < 0 || top < 0 || left + n.offsetWidth * z > pane.width || top + n.offsetHeight * z > pane.height;
  }).map(n => n.dataset.id);
}"""
"""The ids of the cards not wholly inside the pane, from React Flow's viewport transform and each card's place."""


def test_small_flows_are_whole_at_a_readable_zoom_and_a_minimap_shows_from_8_cards(page: Any, folder: Path) -> None:
    """At 1440x900 with the node list (and the side panel) open: up to 10 nodes, every card inside
    the pane at >= 75%; a 5-node flow has no minimap, a 150-node flow has one with every node."""
    examples = ["route-question.yaml", "approve-reply.yaml", "summarise-reviews.yaml", "draft-critique-revise.yaml"]
    for name in ["five.yaml", "ten.yaml", *examples, "ticket-triage.yaml", "handbook-qa.yaml", "headline.yaml"]:
        open_flow(page, folder / name)
        assert canvas(page).get_by_test_id("palette-search").is_visible()  # the node list is open
        assert zoom(page) >= 0.75, name
        assert canvas(page).locator(".react-flow").evaluate(NODES_OFF_SCREEN) == [], name
        if name == "ten.yaml":
            shot(page, "ten-nodes")
    open_flow(page, folder / "five.yaml")
    assert canvas(page).locator(".react-flow__minimap").count() == 0
    open_flow(page, folder / "mid.yaml")
    sync_api.expect(canvas(page).locator(".react-flow__minimap-node")).to_have_count(152, timeout=WAIT_MS)
    shot(page, "mid-flow-minimap")


LINK_WORDS_COVERED = """rf => [...rf.querySelectorAll('.react-flow__edge.fc-edge-guard .react-flow__edge-text')]
  .map(text => text.getBoundingClientRect())
  .filter(box => box.width === 0 || document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2)
    ?.closest('.react-flow__node'))
  .length"""
"""How many guard links' `when` words are hidden under a card (or not drawn)."""


def test_a_guard_links_word_is_never_hidden_under_a_card(page: Any, folder: Path) -> None:
    """The `when` word sits above the guarded card, not mid-curve, where the demo flow's `reply`
    card covered all of it but its first letter."""
    for name, links in (("ticket-triage.yaml", 1), ("route-guarded.yaml", 2)):
        open_flow(page, folder / name)
        rf = canvas(page).locator(".react-flow")
        sync_api.expect(rf.locator(".react-flow__edge.fc-edge-guard")).to_have_count(links, timeout=WAIT_MS)
        assert rf.evaluate(LINK_WORDS_COVERED) == 0, name


def test_the_canvas_shows_guards_models_descriptions_sub_flows_and_errors(page: Any, folder: Path) -> None:
    open_flow(page, folder / "route-guarded.yaml")
    frame = canvas(page)
    sync_api.expect(frame.get_by_test_id("guard-math")).to_have_text("when route.label == 'math'")
    sync_api.expect(frame.get_by_test_id("model-route")).to_have_text("default")
    sync_api.expect(frame.get_by_test_id("description-math")).to_contain_text("Completion-style few-shot prompt")
    assert frame.locator(".react-flow__edge.fc-edge-guard").count() == 2  # route → math, route → chat
    assert frame.locator(".react-flow__edge.fc-edge-conditional").count() == 2  # the wires into them
    dash = frame.locator(".react-flow__edge.fc-edge-conditional path.react-flow__edge-path").first
    assert dash.evaluate("e => getComputedStyle(e).strokeDasharray") not in ("", "none")
    shot(page, "guards")
    open_flow(page, folder / "broken.yaml")
    sync_api.expect(frame.get_by_test_id("node-shout").get_by_test_id("node-errors")).to_contain_text("nosuch")
    shot(page, "node-error")
    page.get_by_role("radio", name="YAML").click()
    sync_api.expect(page.get_by_text(re.compile(r"^line 10: .*nosuch"))).to_be_visible(timeout=WAIT_MS)
    ace = page.frame_locator("iframe[title*='code_editor']")  # open: the flow has a problem
    sync_api.expect(ace.locator(".ace_gutter-cell.ace_error")).to_have_text("10", timeout=WAIT_MS)
    shot(page, "yaml-view")
    page.get_by_role("radio", name="Canvas").click()
    open_flow(page, folder / "summarise-reviews.yaml")
    frame.get_by_test_id("subflow-each").click()
    sync_api.expect(page.get_by_role("combobox", name="Flow", exact=True)).to_have_value(
        "parts/summarise-one.yaml", timeout=WAIT_MS
    )


def _apply(page: Any) -> None:
    page.get_by_role("button", name="Apply", exact=True).first.click()


def test_the_inspector_renames_guards_and_refuses_a_bad_template_keeping_the_ports(page: Any, folder: Path) -> None:
    path = folder / "headline.yaml"
    open_flow(page, path)
    frame = canvas(page)
    frame.get_by_test_id("node-summarise").click()
    sync_api.expect(page.get_by_role("heading", name="summarise")).to_be_visible(timeout=WAIT_MS)
    shot(page, "inspector")
    page.get_by_text("Node: id, guard, order, retry, timeout, cache").click()  # folded under Apply
    page.get_by_role("textbox", name="id", exact=True).fill("digest")
    page.get_by_role("textbox", name="when", exact=True).fill("inputs.article != ''")
    _apply(page)
    sync_api.expect(frame.get_by_test_id("node-digest")).to_be_visible(timeout=WAIT_MS)
    sync_api.expect(frame.get_by_test_id("guard-digest")).to_have_text("when inputs.article != ''")
    page.keyboard.press("Control+s")
    sync_api.expect(frame.get_by_test_id("canvas-message")).to_contain_text("saved", timeout=WAIT_MS)
    text = path.read_text(encoding="utf-8")
    assert "$digest.text" in text and "$summarise" not in text and "when: inputs.article != ''" in text
    sync_api.expect(page.get_by_role("heading", name="digest")).to_be_visible(timeout=WAIT_MS)
    fill_prompt(page, "Summarise {{ article ")
    _apply(page)  # the prompt editor applies its text as it loses focus
    sync_api.expect(page.get_by_text(re.compile("Not applied: .*template"))).to_be_visible(timeout=WAIT_MS)
    sync_api.expect(frame.get_by_test_id("port-digest-out-text")).to_be_visible()  # the wire stays
    assert frame.locator(".react-flow__edge").count() >= 3
    shot(page, "refused")
    page.get_by_role("button", name="Save").click()
    assert path.read_text(encoding="utf-8") == text  # nothing of the refused value reached the flow
    toast = page.get_by_test_id("stToast")  # Save's toast covers the panel's radio until it goes
    sync_api.expect(toast).to_be_visible(timeout=WAIT_MS)
    page.mouse.move(0, 0)  # a pointer over a toast keeps it open
    sync_api.expect(toast).to_have_count(0, timeout=WAIT_MS)
    page.get_by_role("radio", name="Flow", exact=True).click()
    for table in ("Flow inputs", "Flow outputs", "Model aliases"):
        sync_api.expect(page.get_by_text(table, exact=True)).to_be_visible(timeout=WAIT_MS)
    sync_api.expect(page.get_by_test_id("stDataFrame")).to_have_count(3)
    shot(page, "flow-settings")


def test_duplicate_copy_paste_context_menu_and_dark_mode(page: Any, folder: Path, server: str, browser: Any) -> None:
    open_flow(page, folder / "headline.yaml")
    frame = canvas(page)
    root = frame.get_by_test_id("canvas-root")
    count = int(root.get_attribute("data-nodes"))
    frame.get_by_test_id("node-headline").click()
    page.keyboard.press("Control+d")
    sync_api.expect(root).to_have_attribute("data-nodes", str(count + 1), timeout=WAIT_MS)
    frame.get_by_test_id("node-headline").click()
    page.keyboard.press("Control+c")
    page.keyboard.press("Control+v")
    sync_api.expect(root).to_have_attribute("data-nodes", str(count + 2), timeout=WAIT_MS)
    frame.get_by_test_id("node-headline").click(button="right")
    sync_api.expect(frame.get_by_test_id("node-menu")).to_be_visible()
    shot(page, "context-menu")
    frame.get_by_test_id("menu-duplicate").click()
    sync_api.expect(root).to_have_attribute("data-nodes", str(count + 3), timeout=WAIT_MS)
    dark = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        dark.goto(f"{server}/editor?embed=true&embed_options=dark_theme")
        dark_root = canvas(dark).get_by_test_id("canvas-root")
        sync_api.expect(dark_root).to_have_attribute("data-theme", "dark", timeout=WAIT_MS)
        background = canvas(dark).locator(".fc-node").first.evaluate("e => getComputedStyle(e).backgroundColor")
        assert sum(int(v) for v in re.findall(r"\d+", background)[:3]) < 200, background
        dark.wait_for_timeout(500)
        shot(dark, "dark")
    finally:
        dark.close()


def test_home_shows_the_flows_as_cards_and_opens_one_in_the_editor(browser: Any, server: str, folder: Path) -> None:
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        page.goto(server)  # Home is the page the studio opens on (the default page has no path of its own)
        sync_api.expect(page.get_by_role("heading", name="Flowstudio")).to_be_visible(timeout=WAIT_MS)
        cards = page.locator("[class*='st-key-flow_card_']")
        sync_api.expect(cards.first).to_be_visible(timeout=WAIT_MS)
        sync_api.expect(cards).to_have_count(len(flow_files(folder)), timeout=WAIT_MS)
        for link in ("Runs", "Traces", "Experiments"):
            sync_api.expect(page.get_by_role("link", name=link).last).to_be_visible()
        card = cards.filter(has_text="route-question")
        sync_api.expect(card).to_contain_text("5 nodes")
        sync_api.expect(cards.last.get_by_role("button", name="Copy")).to_be_visible(timeout=WAIT_MS)
        page.wait_for_timeout(500)  # the cards' buttons finish drawing
        shot(page, "home")
        card.get_by_role("button", name="Open").click()
        sync_api.expect(page.get_by_role("combobox", name="Flow", exact=True)).to_have_value(
            "route-question.yaml", timeout=WAIT_MS
        )
    finally:
        page.close()


def _start(page: Any, path: Path, question: str) -> Any:
    """Open `path`, run it from the playground with `question`; returns the canvas frame."""
    open_flow(page, path)
    page.get_by_role("button", name="Run").click()
    page.get_by_label("question (str)").fill(question)
    page.get_by_role("button", name="Run", exact=True).click()
    return canvas(page)


def test_the_playground_runs_beside_the_canvas_with_outputs_node_io_errors_and_chat(page: Any, folder: Path) -> None:
    frame = _start(page, folder / "commented.yaml", "what is up?")
    sync_api.expect(frame.get_by_test_id("node-shout")).to_have_class(
        re.compile(r"\bstatus-succeeded\b"), timeout=WAIT_MS
    )
    sync_api.expect(frame.get_by_test_id("preview-answer")).to_have_text("ok", timeout=WAIT_MS)
    panel = page.locator(".st-key-editor_inspector")
    sync_api.expect(panel.get_by_text("Outputs", exact=True)).to_be_visible(timeout=WAIT_MS)
    sync_api.expect(panel.get_by_test_id("stCode").first).to_contain_text("ok")
    frame.get_by_test_id("node-shout").click()
    sync_api.expect(panel.get_by_role("tab", name="Inputs")).to_be_visible(timeout=WAIT_MS)
    panel.get_by_role("tab", name="Outputs").click()
    sync_api.expect(panel.get_by_role("tabpanel").last).to_contain_text("OK", timeout=WAIT_MS)
    shot(page, "playground")
    panel.get_by_text("Chat", exact=True).click()
    page.get_by_placeholder("Message").fill("hello there")
    page.keyboard.press("Enter")
    sync_api.expect(panel.get_by_test_id("stChatMessage")).to_have_count(2, timeout=WAIT_MS)
    sync_api.expect(panel.get_by_test_id("stChatMessage").last).to_contain_text("ok")
    shot(page, "chat")
    open_flow(page, folder / "refusing.yaml")
    page.get_by_role("button", name="Run").click()
    page.get_by_label("question (str)").fill("anything")
    page.get_by_role("button", name="Run", exact=True).click()
    sync_api.expect(frame.get_by_test_id("run-error-answer")).to_contain_text("auth", timeout=WAIT_MS)
    sync_api.expect(panel.get_by_text(re.compile("^answer: .*auth"))).to_be_visible(timeout=WAIT_MS)
    shot(page, "run-failed")


def test_a_human_input_is_answered_in_the_playground(page: Any, folder: Path) -> None:
    open_flow(page, folder / "approve.yaml")
    frame = canvas(page)
    page.get_by_role("button", name="Run").click()
    page.get_by_role("textbox", name="message (str)").fill("my order is late")
    page.get_by_role("button", name="Run", exact=True).click()
    panel = page.locator(".st-key-editor_inspector")
    sync_api.expect(panel.get_by_text("Waiting for input")).to_be_visible(timeout=WAIT_MS)
    sync_api.expect(panel).to_contain_text("Send this reply? Sure.")
    shot(page, "human-input")
    panel.get_by_role("textbox", name="Answer for approve").fill("true")
    panel.get_by_role("button", name="Resume").click()
    sync_api.expect(frame.get_by_test_id("node-send")).to_have_class(
        re.compile(r"\bstatus-succeeded\b"), timeout=WAIT_MS
    )
    sync_api.expect(panel.get_by_test_id("stCode").last).to_contain_text("SENT: Sure.", timeout=WAIT_MS)


def test_the_running_llm_node_streams_its_tokens_onto_the_canvas_and_the_playground(page: Any, folder: Path) -> None:
    frame = _start(page, folder / "streaming.yaml", "count")
    preview = frame.get_by_test_id("preview-answer")
    sync_api.expect(preview).to_contain_text("one", timeout=WAIT_MS)
    partial = preview.inner_text()
    assert "eight" not in partial, partial  # the first words are on screen before the reply is whole
    sync_api.expect(frame.get_by_test_id("node-answer")).to_have_class(re.compile(r"\bstatus-running\b"))
    streaming = page.locator(".st-key-editor_inspector .st-key-streaming_answer")
    sync_api.expect(streaming).to_contain_text("two", timeout=WAIT_MS)  # the panel follows the stream too
    shot(page, "streaming")
    sync_api.expect(preview).to_have_text(STREAMED, timeout=WAIT_MS)
    sync_api.expect(frame.get_by_test_id("node-answer")).to_have_class(
        re.compile(r"\bstatus-succeeded\b"), timeout=WAIT_MS
    )
    sync_api.expect(streaming).to_have_count(0, timeout=WAIT_MS)  # the outputs take its place
