"""Home's Import through AppTest: the same report as `flowstudio import`, the flow written beside the others."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from studio.app.settings import DIR_ENV
from tests.importers.test_importers import FIXTURES

TIMEOUT = 30


def _home_page() -> None:
    from studio.app.home_page import render

    render()


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(FIXTURES / "promptflow" / "basic", tmp_path / "pf-basic")
    shutil.copytree(FIXTURES / "promptflow" / "custom-tool", tmp_path / "pf-custom")
    monkeypatch.setenv(DIR_ENV, str(tmp_path))
    monkeypatch.setenv("FLOWSTUDIO_DB", str(tmp_path / "db.sqlite"))
    return tmp_path


def _import(source: str, placeholders: bool = False) -> AppTest:
    page = AppTest.from_function(_home_page, default_timeout=TIMEOUT).run()
    page.text_input(key="home_import_source").input(source).run()
    if placeholders:
        page.checkbox(key="home_import_allow").check().run()
    page.button(key="home_import_go").click().run()
    assert not page.exception, page.exception
    return page


def test_import_writes_the_flow_into_the_folder_with_the_report(folder: Path) -> None:
    page = _import("pf-basic")
    report = page.code[0].value
    assert "3 nodes: 3 converted, 0 approximated, 0 not converted" in report and "wrote pf-basic.yaml" in report
    assert (folder / "pf-basic.yaml").read_text().startswith("# Imported from Prompt flow")
    assert page.button(key="home_import_open")


def test_a_node_that_cannot_be_converted_writes_nothing_unless_placeholders(folder: Path) -> None:
    refused = _import("pf-custom")
    assert "not converted: tool from a package" in refused.code[0].value and "Nothing written" in refused.code[0].value
    assert not (folder / "pf-custom.yaml").exists()
    written = _import("pf-custom", placeholders=True)
    assert "wrote pf-custom.yaml" in written.code[0].value
    assert "PLACEHOLDER" in (folder / "pf-custom.yaml").read_text()
