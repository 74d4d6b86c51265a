"""Choosing a model in the Editor, in a real browser: an alias' model is picked from the provider's
list, a parameter typed, Apply checks it (`flowstudio models check`) and writes it; an unknown local
model is refused at Apply with the check's words, and nothing changes. Screenshots at 1440x900 and
1024x768 go to test-artifacts/models-*.png."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from studio.flow.spec import load_flow
from tests.app.browser import CHROMIUM, choose, settled, studio_server
from tests.app.editor_browser import WAIT_MS
from tests.conftest import FIXTURES, FLOWSTUDIO, ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install -e '.[dev]')")
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    flows = tmp_path_factory.mktemp("models") / "flows"
    flows.mkdir()
    shutil.copy(FIXTURES / "commented.yaml", flows / "commented.yaml")
    return flows


@pytest.fixture(scope="module")
def server(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("models-server")
    with studio_server(FLOWSTUDIO, folder, root / "flowstudio.db", root / "studio.log") as (url, _):
        yield url


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"models-{name}.png"))


def _type_model(page: Any, model: str) -> None:
    """Type a model the list does not offer into the model box (it accepts new options)."""
    box = page.get_by_role("combobox", name="model", exact=True)
    settled(page)
    box.click()
    page.keyboard.type(model)
    page.keyboard.press("Enter")
    sync_api.expect(box).to_have_value(model, timeout=WAIT_MS)


def _flow_settings(browser: Any, server: str, width: int, height: int) -> Any:
    """A page on the Editor with commented.yaml open and its Flow settings (the model aliases) shown."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(f"{server}/editor?flow=commented.yaml")
    sync_api.expect(page.get_by_role("heading", name="Editor")).to_be_visible(timeout=WAIT_MS)
    page.get_by_role("radio", name="Flow", exact=True).click()
    sync_api.expect(page.get_by_text("Model aliases", exact=True)).to_be_visible(timeout=WAIT_MS)
    return page


def test_a_model_is_picked_from_a_list_checked_on_apply_and_an_unknown_local_one_refused(
    browser: Any, server: str, folder: Path
) -> None:
    expect = sync_api.expect
    path = folder / "commented.yaml"
    page = _flow_settings(browser, server, 1440, 900)
    try:
        choose(page, "provider", "openai")
        choose(page, "model", "openai/gpt-4o-mini")  # the provider's list
        shot(page, "1-openai-list")
        choose(page, "provider", "scripted — replies from a script")
        field = page.locator("[class*='st-key-model-pick-'][class*='-scripted-temperature']")  # the scripted form's
        expect(field).to_be_visible(timeout=WAIT_MS)  # drawn: a field typed in before would be the old form's
        temperature = field.get_by_role("spinbutton", name="temperature")
        temperature.fill("0.4")
        temperature.press("Tab")
        page.get_by_role("button", name="Apply model").click()
        expect(page.get_by_text("answered its check")).to_be_visible(timeout=WAIT_MS)
        page.get_by_role("button", name="Save").click()
        expect(page.get_by_test_id("stToast").last).to_contain_text("Saved", timeout=WAIT_MS)
        default = load_flow(path).spec.models["default"]
        assert default.model == "scripted" and default.temperature == 0.4 and default.script  # the first edit kept
        shot(page, "2-applied")
    finally:
        page.close()
    page = _flow_settings(browser, server, 1024, 768)
    try:
        choose(page, "provider", "local — the embedded model")
        _type_model(page, "local/nosuch")
        page.get_by_role("button", name="Apply model").click()
        refusal = page.get_by_text("Not applied: local/nosuch: unknown local model")
        expect(refusal).to_be_visible(timeout=WAIT_MS)
        page.mouse.move(900, 500)  # over the side panel
        page.mouse.wheel(0, 400)
        page.wait_for_timeout(800)
        shot(page, "3-refused-1024")
        assert load_flow(path).spec.models["default"].model == "scripted"  # nothing of the refused model
    finally:
        page.close()
