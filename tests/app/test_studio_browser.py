"""The studio as a builder starting from nothing (issue 38), in a real browser: every palette type
opens a whole Inspector, an LLM node opens on its prompt, the playground tells the truth, small
windows fit, and no edit is lost. Screenshots of the Editor and Home go to test-artifacts/studio-*.png."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from studio.runtime import registry
from tests.app.browser import CHROMIUM, settled, studio_server
from tests.app.editor_browser import PROMPT_EDITOR, WAIT_MS, canvas, confirmed, fill_prompt
from tests.conftest import FIXTURES, FLOWS, FLOWSTUDIO, ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install -e '.[dev]')")
ARTIFACTS = ROOT / "test-artifacts"
WIDTH, HEIGHT = 1440, 900
STREAMED = "one two three four five six seven eight"
"""A scripted reply streamed a word every 0.5 s (streaming.yaml)."""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    flows = Path(shutil.copytree(FLOWS, tmp_path_factory.mktemp("studio") / "flows"))
    commented = (FIXTURES / "commented.yaml").read_text(encoding="utf-8")
    slow = commented.replace("name: commented", "name: streaming")
    slow = slow.replace("[{reply: ok}]", f"[{{word_delay_s: 0.5, reply: {STREAMED!r}}}]")
    (flows / "streaming.yaml").write_text(slow, encoding="utf-8")
    return flows


@pytest.fixture(scope="module")
def server(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("studio-server")
    with studio_server(FLOWSTUDIO, folder, root / "flowstudio.db", root / "studio.log") as (url, _):
        yield url


def _editor(browser: Any, server: str, width: int = WIDTH, height: int = HEIGHT, flow: str = "") -> Any:
    opened = browser.new_page(viewport={"width": width, "height": height})
    opened.goto(f"{server}/editor" + (f"?flow={flow}" if flow else ""))
    sync_api.expect(canvas(opened).get_by_test_id("canvas-root")).to_be_visible(timeout=WAIT_MS)
    return opened


@pytest.fixture
def page(browser: Any, server: str, request: pytest.FixtureRequest) -> Iterator[Any]:
    opened = _editor(browser, server)
    try:
        yield opened
    finally:
        shot(opened, f"end-{request.node.name}")
        opened.close()


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"studio-{name}.png"))


def new_flow(page: Any) -> str:
    page.get_by_role("button", name="New flow").click()
    field = page.get_by_label("Name")
    sync_api.expect(field).to_have_value(re.compile(r"^new-flow"), timeout=WAIT_MS)
    name = str(field.input_value())
    page.get_by_role("button", name="Create").click()
    page.keyboard.press("Escape")  # close the popover, which would cover the canvas
    sync_api.expect(page.get_by_role("combobox", name="Flow", exact=True)).to_have_value(
        f"{name}.yaml", timeout=WAIT_MS
    )
    sync_api.expect(canvas(page).locator(".react-flow__node")).to_have_count(2, timeout=WAIT_MS)
    return name


def panel(page: Any) -> Any:
    return page.locator(".st-key-editor_inspector")


def add(page: Any, node_type: str) -> None:
    """Click `node_type` in the palette and wait for its Inspector (the new node is selected)."""
    root = canvas(page).get_by_test_id("canvas-root")
    count = int(root.get_attribute("data-nodes") or 0)
    if canvas(page).get_by_test_id("palette-search").count() == 0:  # a narrow window starts with it closed
        canvas(page).get_by_test_id("palette-toggle").click()
    canvas(page).get_by_test_id(f"palette-item-{node_type}").click()
    sync_api.expect(root).to_have_attribute("data-nodes", str(count + 1), timeout=WAIT_MS)
    confirmed(page)
    sync_api.expect(panel(page).get_by_text(node_type, exact=True)).to_be_visible(timeout=WAIT_MS)
    settled(page)


def test_every_palette_type_opens_a_whole_inspector_with_apply(page: Any) -> None:
    """A fresh llm.generate's demos table had two `text` columns: Streamlit refused it, the panel
    stopped there, and there was no Apply."""
    new_flow(page)
    for node_type in registry.keys():  # noqa: SIM118 - a module function, not a dict
        add(page, node_type)
        assert page.get_by_test_id("stException").count() == 0, node_type
        sync_api.expect(panel(page).get_by_role("button", name="Apply", exact=True)).to_be_visible(timeout=WAIT_MS)


def test_an_llm_node_opens_on_its_prompt_with_completions_and_apply_in_reach(page: Any, folder: Path) -> None:
    """The prompt is the first field, in a large editor offering the node's inputs as `{{ name }}`;
    Apply is on screen without scrolling (it was 1,600 px down); a click on a node brings its
    Inspector forward from another tab."""
    name = new_flow(page)
    add(page, "llm.generate")
    inspector = panel(page)
    prompt = page.locator(PROMPT_EDITOR)
    model = inspector.get_by_test_id("stSelectbox").first
    sync_api.expect(prompt).to_be_visible(timeout=WAIT_MS)
    assert prompt.bounding_box()["y"] < model.bounding_box()["y"]  # the prompt comes first
    assert prompt.bounding_box()["height"] >= 100  # a large editor, not a one-line box
    apply = inspector.get_by_role("button", name="Apply", exact=True)
    box = apply.bounding_box()
    assert box is not None and box["y"] + box["height"] <= HEIGHT, box  # no scrolling to reach it
    shot(page, "llm-generate-1440")
    ace = page.frame_locator(PROMPT_EDITOR)
    ace.locator("#REACT_ACE_EDITOR .ace_content").click()
    page.keyboard.press("Control+End")
    page.keyboard.type(" te")
    sync_api.expect(ace.locator(".ace_autocomplete")).to_contain_text("text", timeout=WAIT_MS)
    page.keyboard.press("Escape")
    fill_prompt(page, "Answer briefly: {{ text }}")
    apply.click()
    settled(page)
    page.wait_for_timeout(1000)
    shot(page, "after-apply")
    page.get_by_role("button", name="Save").click()
    path = folder / f"{name}.yaml"
    sync_api.expect(page.get_by_test_id("stToast").last).to_contain_text(f"Saved {name}", timeout=WAIT_MS)
    assert "prompt: 'Answer briefly: {{ text }}'" in path.read_text(encoding="utf-8") or (
        'prompt: "Answer briefly: {{ text }}"' in path.read_text(encoding="utf-8")
    ), path.read_text(encoding="utf-8")
    page.get_by_role("radio", name="Flow", exact=True).click()
    sync_api.expect(inspector.get_by_text("Flow inputs", exact=True)).to_be_visible(timeout=WAIT_MS)
    canvas(page).get_by_test_id("node-$outputs").click()  # select something else, then the node again
    settled(page)
    page.get_by_role("radio", name="Flow", exact=True).click()
    sync_api.expect(inspector.get_by_text("Flow inputs", exact=True)).to_be_visible(timeout=WAIT_MS)
    canvas(page).get_by_test_id("node-generate").click()
    sync_api.expect(page.get_by_role("radio", name="Inspector")).to_be_checked(timeout=WAIT_MS)
    sync_api.expect(inspector.get_by_role("heading", name="generate")).to_be_visible(timeout=WAIT_MS)


OUTPUTS_COVERED = """rf => {
  const card = rf.querySelector('.react-flow__node[data-id="$outputs"]');
  const box = card.getBoundingClientRect(), hidden = [];
  for (let i = 0; i <= 4; i++) for (let j = 0; j <= 4; j++) {
    const x = box.x + 8 + (box.width - 16) * i / 4, y = box.y + 8 + (box.height - 16) * j / 4;
    const top = document.elementFromPoint(x, y);
    if (!top || top.closest('.react-flow__node') !== card) hidden.push([Math.round(x), Math.round(y)]);
  }
  return hidden;
}"""
"""The points of the Flow outputs card (a 5x5 grid) that another card (its preview) covers."""


def test_the_playground_tells_the_truth_with_one_run_button(browser: Any, server: str) -> None:
    """The toolbar's Run is the only one; a second run shows its running state, not the first
    run's answer as if current; the answer's preview leaves Flow outputs in sight."""
    page = _editor(browser, server, flow="streaming.yaml")
    try:
        frame = canvas(page)
        sync_api.expect(frame.get_by_test_id("node-answer")).to_be_visible(timeout=WAIT_MS)
        run = page.get_by_role("button", name="Run", exact=True)
        run.click()  # the question is empty: the Playground opens to ask for it
        field = page.get_by_label("question (str)")
        sync_api.expect(field).to_be_visible(timeout=WAIT_MS)
        assert page.get_by_role("button", name="Start").count() == 0  # one Run button
        field.fill("count")
        run.click()
        answer, preview = frame.get_by_test_id("node-answer"), frame.get_by_test_id("preview-answer")
        sync_api.expect(preview).to_have_text(STREAMED, timeout=WAIT_MS)
        sync_api.expect(answer).to_have_class(re.compile(r"\bstatus-succeeded\b"), timeout=WAIT_MS)
        sync_api.expect(panel(page).get_by_text("Outputs", exact=True)).to_be_visible(timeout=WAIT_MS)
        sync_api.expect(frame.get_by_test_id("preview-shout")).to_have_text(STREAMED.upper(), timeout=WAIT_MS)
        assert frame.locator(".react-flow").evaluate(OUTPUTS_COVERED) == [], "a card covers Flow outputs"
        shot(page, "played")
        field.fill("count again")  # another question: the same one is answered from the cache at once
        run.click()
        sync_api.expect(answer).to_have_class(re.compile(r"\bstatus-(running|pending)\b"), timeout=WAIT_MS)
        shot(page, "running-again")
        sync_api.expect(panel(page).get_by_text(re.compile("^Running…"))).to_be_visible(timeout=WAIT_MS)
        sync_api.expect(panel(page).get_by_text("Outputs", exact=True)).to_have_count(0)  # the last answer is gone
        sync_api.expect(answer).to_have_class(re.compile(r"\bstatus-(running|pending)\b"))
        assert preview.count() == 0 or preview.inner_text() != STREAMED
        sync_api.expect(preview).to_have_text(STREAMED, timeout=WAIT_MS)
    finally:
        shot(page, "end-truth")
        page.close()


NODES_OFF_SCREEN = """rf => {
  const pane = rf.getBoundingClientRect();
  return [...rf.querySelectorAll('.react-flow__node')].filter(n => {
    const box = n.getBoundingClientRect();
    return box.left < pane.left - 1 || box.top < pane.top - 1 || box.right > pane.right + 1 || box.bottom > pane.bottom + 1;
  }).map(n => n.dataset.id);
}"""
"""The ids of the cards not wholly inside the canvas pane."""
CUT_TEXT = """root => [...root.querySelectorAll('*')]
  .filter(e => e.offsetParent !== null && [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
  .filter(e => {
    const lines = document.createRange(); lines.selectNodeContents(e);
    const rects = [...lines.getClientRects()].filter(r => r.width > 0);
    return e.scrollWidth > e.clientWidth + 1 || new Set(rects.map(r => Math.round(r.top))).size > 1;
  })
  .map(e => e.innerText.trim())"""
"""Texts on screen cut by their box or broken over lines ("Edito / r", "S...")."""


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (1024, 768)])
def test_the_editor_fits_the_window_with_one_save_and_the_yaml_once(
    browser: Any, server: str, width: int, height: int
) -> None:
    page = _editor(browser, server, width, height)
    try:
        new_flow(page)
        add(page, "llm.generate")
        sync_api.expect(page.locator(PROMPT_EDITOR)).to_be_visible(timeout=WAIT_MS)
        page.wait_for_timeout(800)  # the editor and canvas finish drawing
        shot(page, f"editor-llm-generate-{width}x{height}")
        toolbar = page.locator(".st-key-editor_toolbar")
        assert toolbar.evaluate(CUT_TEXT) == []
        for name in ("Editor",):
            box = page.get_by_role("heading", name=name).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
        apply = panel(page).get_by_role("button", name="Apply", exact=True).bounding_box()
        assert apply is not None and apply["y"] + apply["height"] <= height, apply  # Apply in reach
        for button in ("Save", "Run", "New flow"):
            box = page.get_by_role("button", name=button, exact=True).bounding_box()
            assert box is not None and box["x"] + box["width"] <= width and box["y"] + box["height"] <= height, button
        assert page.get_by_role("button", name="Save", exact=True).count() == 1
        assert canvas(page).get_by_role("button", name="Save").count() == 0  # one Save button
        page.get_by_role("radio", name="YAML").click()
        sync_api.expect(page.locator("iframe[title*='code_editor']")).to_have_count(1, timeout=WAIT_MS)
        assert page.get_by_test_id("stCode").count() == 0  # the file once, in its editor
        shot(page, f"yaml-{width}x{height}")
    finally:
        page.close()


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (1024, 768)])
def test_the_demo_flow_opens_whole(browser: Any, server: str, width: int, height: int) -> None:
    page = _editor(browser, server, width, height, flow="ticket-triage.yaml")
    try:
        sync_api.expect(canvas(page).get_by_test_id("node-classify")).to_be_visible(timeout=WAIT_MS)
        page.wait_for_timeout(800)  # the opening view is set once the nodes are measured
        shot(page, f"demo-{width}x{height}")
        assert canvas(page).locator(".react-flow").evaluate(NODES_OFF_SCREEN) == []
        assert page.locator(".st-key-editor_toolbar").evaluate(CUT_TEXT) == []
    finally:
        page.close()


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (1024, 768)])
def test_home_shows_navigation_once_the_demo_first_and_sub_flows_apart(
    browser: Any, server: str, width: int, height: int
) -> None:
    page = browser.new_page(viewport={"width": width, "height": height})
    try:
        page.goto(server)
        cards = page.locator("[class*='st-key-flow_card_']")
        sync_api.expect(cards.first).to_be_visible(timeout=WAIT_MS)
        sync_api.expect(cards.first).to_contain_text("ticket-triage")  # the demo flow first
        for link in ("Runs", "Traces", "Experiments"):
            sync_api.expect(page.get_by_role("link", name=link, exact=True)).to_have_count(1)  # navigation once
        parts = page.get_by_role("heading", name="Sub-flows")
        sync_api.expect(parts).to_be_visible()
        below = parts.bounding_box()["y"]
        for name in ("summarise-one", "critique-revise"):
            card = cards.filter(has_text=f"parts/{name}.yaml")
            assert card.bounding_box()["y"] > below, name
        for name in ("ticket-triage", "headline"):
            assert cards.filter(has_text=f"{name}.yaml").first.bounding_box()["y"] < below, name
        page.wait_for_timeout(500)
        shot(page, f"home-{width}x{height}")
        assert cards.first.evaluate(CUT_TEXT) == []  # Open, Run, Copy in words
    finally:
        page.close()


def test_unsaved_edits_survive_a_reload_and_a_closed_tab_and_leaving_asks_first(
    browser: Any, server: str, folder: Path
) -> None:
    page = _editor(browser, server)
    try:
        name = new_flow(page)
        add(page, "text.template")
        sync_api.expect(page.get_by_text("Unsaved changes")).to_be_visible(timeout=WAIT_MS)
        asked: list[str] = []
        page.on("dialog", lambda dialog: (asked.append(dialog.type), dialog.accept()))
        page.reload()
        sync_api.expect(page.get_by_text("has unsaved edits from an earlier visit")).to_be_visible(timeout=WAIT_MS)
        assert asked == ["beforeunload"]  # leaving with unsaved edits asked first
        assert "template" not in (folder / f"{name}.yaml").read_text(encoding="utf-8")  # nothing saved
    finally:
        page.close()
    again = _editor(browser, server, flow=f"{name}.yaml")  # the tab was closed: a new one
    try:
        sync_api.expect(again.get_by_text("has unsaved edits from an earlier visit")).to_be_visible(timeout=WAIT_MS)
        shot(again, "draft-offered")
        again.get_by_role("button", name="Restore").click()
        sync_api.expect(canvas(again).get_by_test_id("node-template")).to_be_visible(timeout=WAIT_MS)
        sync_api.expect(again.get_by_text("Unsaved changes")).to_be_visible(timeout=WAIT_MS)
        again.get_by_role("button", name="Save", exact=True).click()
        sync_api.expect(again.get_by_test_id("stToast").last).to_contain_text(f"Saved {name}", timeout=WAIT_MS)
        assert "type: text.template" in (folder / f"{name}.yaml").read_text(encoding="utf-8")
        assert not (folder / f".{name}.draft.yaml").exists()
    finally:
        again.close()


CARDS_OVERLAPPING = """rf => {
  const boxes = [...rf.querySelectorAll('.react-flow__node')].map(n => [n.dataset.id, n.getBoundingClientRect()]);
  const meet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  return boxes.flatMap(([id, box], i) => boxes.slice(i + 1).filter(([, other]) => meet(box, other))
    .map(([other]) => id + ' ' + other));
}"""
"""Pairs of cards drawn over each other."""


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (1024, 768)])
def test_a_palette_node_lands_whole_in_view_beside_the_selection_and_under_no_card(
    browser: Any, server: str, width: int, height: int
) -> None:
    page = _editor(browser, server, width, height)
    try:
        new_flow(page)
        if canvas(page).get_by_test_id("palette-search").count() == 0:  # a narrow window starts with it closed
            canvas(page).get_by_test_id("palette-toggle").click()
            canvas(page).get_by_test_id("canvas-fit").click()  # the node list took the pane's left
        for node_type in ("llm.generate", "text.template", "llm.classify", "text.split"):
            add(page, node_type)
            page.wait_for_timeout(300)  # the view settles (it widens only when it must)
            rf = canvas(page).locator(".react-flow")
            assert rf.evaluate(NODES_OFF_SCREEN) == [], node_type
            assert rf.evaluate(CARDS_OVERLAPPING) == [], node_type
        generate = canvas(page).get_by_test_id("node-generate").bounding_box()
        template = canvas(page).get_by_test_id("node-template").bounding_box()
        distance = abs(template["x"] - generate["x"]) + abs(template["y"] - generate["y"])
        assert distance < 700, "near the node selected when it was added"
    finally:
        shot(page, f"placed-{width}x{height}")
        page.close()


def test_tidy_lays_the_flow_out_again_undoably_and_save_keeps_it(browser: Any, server: str, folder: Path) -> None:
    from studio.editor.layout import read_sidecar

    path = folder / "headline.yaml"
    page = _editor(browser, server, flow="headline.yaml")
    try:
        frame = canvas(page)
        save = page.get_by_role("button", name="Save", exact=True)

        def saved() -> Any:
            save.click()
            sync_api.expect(page.get_by_test_id("stToast").last).to_contain_text("Saved", timeout=WAIT_MS)
            page.mouse.move(0, 0)  # a pointer over a toast keeps it open
            sync_api.expect(page.get_by_test_id("stToast")).to_have_count(0, timeout=WAIT_MS)
            return read_sidecar(path)

        sync_api.expect(frame.get_by_test_id("node-summarise")).to_be_visible(timeout=WAIT_MS)
        tidy = saved()
        title = frame.get_by_test_id("node-summarise").locator(".fc-node-header, .fc-title").first
        box = title.bounding_box() or frame.get_by_test_id("node-summarise").bounding_box()
        page.mouse.move(box["x"] + 10, box["y"] + 8)
        page.mouse.down()
        page.mouse.move(box["x"] + 60, box["y"] + 300, steps=12)
        page.mouse.up()
        confirmed(page)
        settled(page)
        moved = saved()
        assert moved != tidy
        frame.get_by_test_id("canvas-tidy").click()
        sync_api.expect(frame.get_by_test_id("canvas-message")).to_contain_text("tidied", timeout=WAIT_MS)
        assert saved() == tidy
        frame.get_by_test_id("canvas-undo").click()
        sync_api.expect(frame.get_by_test_id("canvas-message")).to_have_count(0, timeout=WAIT_MS)  # undone
        settled(page)
        assert saved() == moved
    finally:
        shot(page, "end-tidy")
        page.close()
