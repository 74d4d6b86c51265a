"""The Editor page in a real browser: build a flow by clicks and drags, refuse bad wires, save
without loss, run from the canvas."""

from __future__ import annotations

import difflib
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from studio.editor.files import flow_files
from studio.flow.spec import load_flow
from tests.app.browser import CHROMIUM, choose, settled, studio_server
from tests.app.editor_browser import CANVAS_FRAME, WAIT_MS, add_from_palette, big_flow, canvas, fill_prompt, wire
from tests.conftest import CLI, FIXTURES, FLOWS, FLOWSTUDIO, ROOT, SCRIPTS

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium; .ci/run does)",
)
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install -e '.[dev]')")
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example flows (with parts and data) and a scripted fixture, in a folder the studio may write."""
    flows = Path(shutil.copytree(FLOWS, tmp_path_factory.mktemp("editor") / "flows"))
    shutil.copy(FIXTURES / "commented.yaml", flows / "commented.yaml")
    (flows / "big.yaml").write_text(big_flow(200), encoding="utf-8")
    return flows


@pytest.fixture(scope="module")
def server(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("editor-server")
    with studio_server(FLOWSTUDIO, folder, root / "flowstudio.db", root / "studio.log") as (url, _):
        yield url


@pytest.fixture
def page(browser: Any, server: str, request: pytest.FixtureRequest) -> Iterator[Any]:
    """The Editor page; a screenshot of how it ended goes to test-artifacts/."""
    opened = browser.new_page(viewport={"width": 1600, "height": 1100})
    opened.goto(f"{server}/editor")
    sync_api.expect(opened.get_by_role("heading", name="Editor")).to_be_visible(timeout=WAIT_MS)
    try:
        yield opened
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        opened.screenshot(path=str(ARTIFACTS / f"editor-{request.node.name}.png"), full_page=True)
        opened.close()


def _choose_flow(page: Any, path: Path) -> None:
    """Open `path` and wait until the canvas shows its nodes (not the previous flow's)."""
    choose(page, "Flow", path.name)
    nodes = load_flow(path).spec.nodes
    root = canvas(page).get_by_test_id("canvas-root")
    sync_api.expect(root).to_have_attribute("data-nodes", str(len(nodes) + 2), timeout=WAIT_MS)
    sync_api.expect(canvas(page).get_by_test_id(f"node-{next(iter(nodes))}")).to_be_attached(timeout=WAIT_MS)


def _new_flow(page: Any) -> str:
    page.get_by_role("button", name="New flow").click()
    field = page.get_by_label("Name")
    sync_api.expect(field).to_have_value(re.compile(r"^new-flow"), timeout=WAIT_MS)
    name = field.input_value()
    page.get_by_role("button", name="Create").click()
    page.keyboard.press("Escape")  # close the popover, which would cover the canvas
    sync_api.expect(page.get_by_role("combobox", name="Flow", exact=True)).to_have_value(
        f"{name}.yaml", timeout=WAIT_MS
    )
    sync_api.expect(canvas(page).locator(".react-flow__node")).to_have_count(2, timeout=WAIT_MS)  # the new, empty flow
    return name


def _save(page: Any, path: Path, contains: str = "") -> None:
    page.get_by_role("button", name="Save").click()
    sync_api.expect(page.get_by_test_id("stToast").last).to_contain_text(f"Saved {path.stem}", timeout=WAIT_MS)
    assert contains in path.read_text(encoding="utf-8")


def test_build_a_three_node_flow_by_clicks_and_drags(page: Any, folder: Path, cli: CLI) -> None:
    name = _new_flow(page)
    add_from_palette(page, "text.template", "template")
    add_from_palette(page, "llm.generate", "generate")
    add_from_palette(page, "text.template", "template_2")
    wire(page, ("$inputs", "+"), ("template", "text"), edges=1)
    wire(page, ("template", "text"), ("generate", "text"), edges=2)
    wire(page, ("generate", "text"), ("template_2", "text"), edges=3)
    wire(page, ("template_2", "text"), ("$outputs", "+"), edges=4)
    path = folder / f"{name}.yaml"
    _save(page, path, contains="$template_2.text")
    assert cli("validate", str(path)).code == 0
    result = cli("run", str(path), "-i", "text=hi", "--model", f"default=scripted/{SCRIPTS / 'editor.yaml'}", "--json")
    assert result.code == 0, result.err
    assert result.json()["outputs"] == {"text": "a scripted answer"}
    assert (folder / f"{name}.layout.yaml").exists()


CLICK_THEN_LOOK = """async () => {
  document.querySelector('[data-testid="palette-item-text.template"]').click();
  await Promise.resolve();
  return [
    document.querySelector('[data-testid="node-template"]') !== null,
    document.querySelector('[data-testid="canvas-root"]').getAttribute("data-unconfirmed"),
  ];
}"""
"""Click a palette entry inside the canvas frame and look once React has run the click's update (a
microtask later): is the node's card there, and how many edits wait for Python? Python's answer
comes as a message task, so it cannot land before this look."""


def test_a_palette_click_draws_the_node_before_python_answers(page: Any, folder: Path) -> None:
    name = _new_flow(page)
    root = canvas(page).get_by_test_id("canvas-root")
    frame = page.locator(CANVAS_FRAME).element_handle().content_frame()
    assert frame.evaluate(CLICK_THEN_LOOK) == [True, "1"]
    sync_api.expect(root).to_have_attribute("data-unconfirmed", "0", timeout=WAIT_MS)
    sync_api.expect(page.get_by_role("heading", name="template")).to_be_visible(timeout=WAIT_MS)  # Python's, selected
    _save(page, folder / f"{name}.yaml", contains="template:")  # under the id the canvas proposed


def test_incompatible_ports_are_refused_with_both_types(page: Any, folder: Path) -> None:
    name = _new_flow(page)
    add_from_palette(page, "text.split", "split")
    add_from_palette(page, "llm.classify", "classify")
    wire(page, ("split", "chunks"), ("classify", "text"), edges=0)
    message = canvas(page).get_by_test_id("canvas-message")
    sync_api.expect(message).to_contain_text("list[str]", timeout=WAIT_MS)
    sync_api.expect(message).to_contain_text("(str)")
    root = canvas(page).get_by_test_id("canvas-root")
    sync_api.expect(root).to_have_attribute("data-unconfirmed", "0", timeout=WAIT_MS)
    sync_api.expect(canvas(page).locator(".react-flow__edge")).to_have_count(0)  # the wire drawn at once is gone
    assert "classify" not in (folder / f"{name}.yaml").read_text(encoding="utf-8")  # nothing saved yet either way


def test_delete_then_undo_brings_the_node_back(page: Any, folder: Path) -> None:
    _choose_flow(page, folder / "headline.yaml")
    node = canvas(page).get_by_test_id("node-title_case")
    node.click()
    sync_api.expect(node).to_have_class(re.compile(r"\bis-selected\b"), timeout=WAIT_MS)
    settled(page)  # the click's select event has been handled: a rerun now would not undo the selection
    page.keyboard.press("Delete")
    sync_api.expect(node).to_have_count(0, timeout=WAIT_MS)
    canvas(page).get_by_test_id("canvas-undo").click()
    sync_api.expect(node).to_be_visible(timeout=WAIT_MS)


def test_a_switch_draws_one_handle_per_branch(page: Any, folder: Path) -> None:
    _choose_flow(page, folder / "route-question.yaml")
    for port in ("branch", "math", "chat"):
        sync_api.expect(canvas(page).get_by_test_id(f"port-route-out-{port}")).to_be_visible(timeout=WAIT_MS)
    sync_api.expect(canvas(page).get_by_test_id("port-route-out-billing")).to_have_count(0)


def test_open_and_save_every_example_keeps_its_bytes(page: Any, folder: Path) -> None:
    examples = [folder / p.name for p in flow_files(FLOWS) if p.parent == FLOWS]
    examples.append(folder / "big.yaml")
    before = {p: p.read_bytes() for p in examples}
    for path in examples:
        _choose_flow(page, path)
        _save(page, path)
        assert path.read_bytes() == before[path], path.name
        assert path.with_name(f"{path.stem}.layout.yaml").exists()


def test_run_from_the_editor_shows_status_then_the_trace(page: Any, folder: Path) -> None:
    _choose_flow(page, folder / "commented.yaml")
    page.get_by_role("button", name="Run").click()
    page.get_by_label("question (str)").fill("what is up?")
    page.get_by_role("button", name="Run", exact=True).click()
    sync_api.expect(canvas(page).get_by_test_id("node-answer")).to_have_class(
        re.compile(r"\bstatus-succeeded\b"), timeout=WAIT_MS
    )
    sync_api.expect(canvas(page).get_by_test_id("node-shout")).to_have_class(
        re.compile(r"\bstatus-succeeded\b"), timeout=WAIT_MS
    )
    page.get_by_role("button", name="Open trace (succeeded)").click()
    sync_api.expect(page.get_by_role("heading", name="Traces")).to_be_visible(timeout=WAIT_MS)


def test_inspector_edit_changes_only_the_prompt_and_the_yaml_view_shows_it(page: Any, folder: Path) -> None:
    path = folder / "headline.yaml"
    before = path.read_text(encoding="utf-8")
    _choose_flow(page, path)
    canvas(page).get_by_test_id("node-summarise").click()
    sync_api.expect(page.get_by_role("heading", name="summarise")).to_be_visible(timeout=WAIT_MS)
    fill_prompt(page, "Summarise in one sentence:\n\n{{ article }}")
    page.get_by_role("button", name="Apply").click()
    page.get_by_role("radio", name="YAML").click()
    code = page.frame_locator("iframe[title*='code_editor']").locator(".ace_content")  # the file, once
    sync_api.expect(code).to_contain_text("Summarise in one sentence:", timeout=WAIT_MS)
    _save(page, path)
    after = path.read_text(encoding="utf-8")
    changed = [line for line in difflib.ndiff(before.splitlines(), after.splitlines()) if line[:1] in "+-"]
    assert changed == [
        '-       prompt: "Article: {{ article }}\\nSummary:"',
        '+       prompt: "Summarise in one sentence:\\n\\n{{ article }}"',
    ]


def test_a_200_node_flow_opens_and_takes_an_edit(page: Any, folder: Path) -> None:
    """Functional here, with room for a busy CI machine; bench/editor_timing.py measures the times."""
    started = time.perf_counter()
    _choose_flow(page, folder / "big.yaml")
    opened = time.perf_counter() - started
    add_from_palette(page, "text.template", "template")
    sync_api.expect(canvas(page).get_by_test_id("canvas-root")).to_have_attribute("data-nodes", "203", timeout=WAIT_MS)
    assert opened < 15, opened
