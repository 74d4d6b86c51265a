"""The trace page's graph is the editor's canvas, read-only and coloured by status; a click on a
node shows that node's details. Its time line puts steps that ran at the same time side by side."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from studio.app.trace_canvas import Acked, clicked
from studio.runtime.runner import run_flow
from studio.store import SQLiteStore
from studio.store.base import RunRecord, StepRecord
from tests.app.browser import CHROMIUM, studio_server
from tests.app.seed import FLOWS, two_inputs_run
from tests.conftest import FLOWSTUDIO, ROOT
from tests.test_timeline import FAN_OUT

TIMEOUT = 30
FRAME = 'iframe[title="studio.app.canvas.flow_canvas"]'
WAIT_MS = 20_000


def _trace_page() -> None:
    from studio.app.trace_page import render

    render()


def _open(run_id: str, **query: str) -> AppTest:
    app = AppTest.from_function(_trace_page, default_timeout=TIMEOUT)
    app.query_params["run"] = run_id
    for name, value in query.items():
        app.query_params[name] = value
    app.run()
    assert not app.exception, app.exception
    return app


def _canvas_args(app: AppTest, run_id: str) -> dict[str, Any]:
    """What the page handed the canvas component (its JSON arguments)."""
    (element,) = [e for e in app.get("component_instance") if e.key == f"trace_canvas_{run_id}"]
    return dict(json.loads(element.proto.json_args))


def _statuses(args: dict[str, Any]) -> dict[str, Any]:
    return {n["id"]: n["status"] for n in args["graph"]["nodes"]}


def test_clicks_are_read_once_per_mount() -> None:
    acked = Acked()
    value = {"session": "m1", "events": [_select("a", 1), {"kind": "move", "seq": 2}, _select("b", 3)]}
    assert clicked(value, acked) == "b" and (acked.session, acked.seq) == ("m1", 3)  # the newest click wins
    assert clicked(value, acked) is None  # the same events again: already handled
    value["events"].append(_select(None, 4))
    assert clicked(value, acked) is None and acked.seq == 4  # a click on the pane picks nothing
    remount = {"session": "m2", "events": [_select("a", 1)]}  # a new mount counts from 1 again
    assert clicked(remount, acked) == "a" and (acked.session, acked.seq) == ("m2", 1)
    assert clicked(None, acked) is None and clicked({}, acked) is None


def _select(node: str | None, seq: int) -> dict[str, Any]:
    return {"kind": "select", "node": node, "seq": seq}


def test_the_graph_is_the_canvas_read_only_coloured_by_status(app_env: dict[str, str]) -> None:
    run_id = app_env["failing_a"]
    args = _canvas_args(_open(run_id), run_id)
    assert args["readonly"] is True
    graph = args["graph"]
    expected = {
        "$inputs": "succeeded",
        "note": "succeeded",
        "draft": "succeeded",
        "answer": "failed",
        "$outputs": "failed",
    }
    assert _statuses(args) == expected
    assert graph["selected"] == "answer"  # the failing node, as in the Node box
    assert graph["palette"] == [] and not graph["can_undo"]
    assert not any(n["add_port"] or n["errors"] for n in graph["nodes"])
    answer = next(n for n in graph["nodes"] if n["id"] == "answer")
    assert "auth" in answer["run_error"]
    assert not any(n.get("cause") for n in graph["nodes"])  # an auth error: its upstream nodes were fine
    assert {(e["source"], e["target"]) for e in graph["edges"]} >= {("draft", "answer")}


def test_the_producer_of_a_rejected_input_is_ringed_as_the_likely_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.db"
    store = SQLiteStore(db)
    try:
        two_inputs_run(store, "input left: Input should be a valid string", "bad_input")
    finally:
        store.close()
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    graph = _canvas_args(_open("two"), "two")["graph"]
    assert [n["id"] for n in graph["nodes"] if n.get("cause")] == ["a"]  # it produced the rejected `left`
    assert graph["selected"] == "c"


def test_a_click_on_a_node_shows_its_details_once(app_env: dict[str, str]) -> None:
    run_id = app_env["failing_a"]
    app = _open(run_id, tab="Cost")
    assert not any(m.value == "**`answer`**" for m in app.markdown)  # the Node tab is closed
    key = f"trace_canvas_{run_id}"
    app.session_state[key] = {"session": "mount1", "events": [{"kind": "select", "node": "draft", "seq": 1}]}
    app.run()
    assert not app.exception, app.exception
    assert app.session_state["tab"] == "Node"  # a click opens the clicked node's details
    assert app.selectbox(key=f"node_{run_id}").value == "draft"
    assert app.query_params["node"] == "draft"
    assert any(m.value == "**`draft`**" for m in app.markdown)
    args = _canvas_args(app, run_id)
    assert (args["graph"]["selected"], args["graph"]["ack"], args["graph"]["ack_session"]) == ("draft", 1, "mount1")
    # the box still works, and the click already handled does not come back
    app.selectbox(key=f"node_{run_id}").select("answer").run()
    assert app.selectbox(key=f"node_{run_id}").value == "answer"
    assert _canvas_args(app, run_id)["graph"]["selected"] == "answer"


def test_a_click_on_a_time_line_bar_shows_that_step_once(app_env: dict[str, str]) -> None:
    run_id = app_env["nested"]
    app = _open(run_id, tab="Cost")
    app.session_state[f"timeline_{run_id}"] = {"selection": {"picked": [{"step": "refine[1].critique"}]}}
    app.run()
    assert not app.exception, app.exception
    assert app.session_state["tab"] == "Node"
    box = app.selectbox(key=f"node_{run_id}")
    assert box.value == "refine" and app.selectbox(key="step_refine").value == "refine[1].critique"
    other = next(n for n in box.options if n != "refine")
    box.select(other).run()  # the pick was handled: the box still works
    assert app.selectbox(key=f"node_{run_id}").value == other


def test_a_run_without_its_flow_text_keeps_the_picture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "runs.db"
    store = SQLiteStore(db)
    try:
        store.create_run(RunRecord(run_id="old", flow="gone", flow_path=None, flow_hash="h", inputs={}))
        store.finish_step("old", StepRecord(node="x", status="succeeded"), [])
        store.finish_run("old", status="succeeded", outputs={}, error=None)
    finally:
        store.close()
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    app = _open("old")
    assert not app.get("component_instance")  # nothing the editor could draw: graphviz's picture instead
    assert app.get("image")
    assert any("no stored flow text" in c.value for c in app.caption)


def test_a_big_flow_opens_as_the_picture_and_the_canvas_is_one_switch_away(
    app_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from studio.app import trace_parts

    monkeypatch.setattr(trace_parts, "CANVAS_UP_TO", 2)  # the failing flow's 3 nodes and steps count as big
    run_id = app_env["failing_a"]
    app = _open(run_id)
    assert not app.get("component_instance") and app.get("image")
    assert not _gantt(app)
    app.toggle(key=f"canvas_on_{run_id}").set_value(True).run()
    assert not app.exception, app.exception
    assert _canvas_args(app, run_id)["readonly"] is True and not app.get("image")
    app.toggle(key=f"timeline_on_{run_id}").set_value(True).run()
    assert _gantt(app) and any("at most 1 ran at the same time" in c.value for c in app.caption)


def _gantt(app: AppTest) -> list[dict[str, Any]]:
    charts = [json.loads(c.proto.spec) for c in app.get("vega_lite_chart")]
    return [c for c in charts if c["encoding"].get("x2")]


def test_the_time_line_shows_a_fan_out_side_by_side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db, run_id = _fan_out_run(tmp_path)
    monkeypatch.setenv("FLOWSTUDIO_DB", str(db))
    app = _open(run_id)
    (gantt,) = _gantt(app)
    assert gantt["encoding"]["x2"]["field"] == "shown_end"
    assert {t["field"] for t in gantt["encoding"]["tooltip"]} >= {"step", "attempt", "took", "tokens", "cost"}
    assert any("at most 2 ran at the same time" in c.value for c in app.caption)


def _fan_out_run(folder: Path) -> tuple[Path, str]:
    flow = folder / "fan.yaml"
    flow.write_text(FAN_OUT, encoding="utf-8")
    db = folder / "runs.db"
    result = run_flow(flow, {"topic": "tea"}, db=db)
    assert result.status == "succeeded", result.error
    return db, result.run_id


browser_only = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium; .ci/run does)",
)


@pytest.fixture(scope="module")
def server(seeded: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("server") / "studio.log"
    with studio_server(FLOWSTUDIO, FLOWS, seeded[0], log) as (url, _):
        yield url


@pytest.mark.slow
@browser_only
def test_clicking_a_node_in_the_browser_shows_its_details(
    server: str, browser: Any, seeded: tuple[Path, dict[str, str]]
) -> None:
    expect = pytest.importorskip("playwright.sync_api").expect
    run_id = seeded[1]["failing_a"]
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(f"{server}/traces?run={run_id}")
        frame = page.frame_locator(FRAME)
        draft = frame.get_by_test_id("node-draft")
        expect(draft).to_be_visible(timeout=WAIT_MS)
        expect(frame.get_by_test_id("canvas-root")).to_have_attribute("data-readonly", "true")
        expect(frame.get_by_test_id("node-answer")).to_have_class(_has("status-failed"))
        expect(frame.get_by_test_id("node-answer")).to_have_class(_has("is-selected"))
        assert frame.get_by_test_id("palette-toggle").count() == 0 and frame.get_by_test_id("canvas-save").count() == 0
        before = draft.bounding_box()
        assert before is not None
        page.mouse.move(before["x"] + 20, before["y"] + 12)
        page.mouse.down()
        page.mouse.move(before["x"] + 220, before["y"] + 150, steps=10)
        page.mouse.up()  # a drag: read-only, so the node stays where it was
        after = draft.bounding_box()
        assert after is not None and (after["x"], after["y"]) == (before["x"], before["y"])
        frame.get_by_test_id("node-draft").locator(".fc-label").click()
        expect(page.get_by_role("combobox", name="Node")).to_have_value("draft", timeout=WAIT_MS)
        expect(page.get_by_role("tabpanel").first.get_by_text("draft", exact=True).first).to_be_visible(timeout=WAIT_MS)
        expect(frame.get_by_test_id("node-draft")).to_have_class(_has("is-selected"))
        expect(frame.get_by_test_id("node-answer")).not_to_have_class(_has("is-selected"))
        assert page.evaluate("new URL(location.href).searchParams.get('node')") == "draft"
        (ROOT / "test-artifacts").mkdir(exist_ok=True)
        page.screenshot(path=str(ROOT / "test-artifacts" / "trace-canvas-click.png"))
        _click_bar(page, "note")  # a bar of the time line picks its node too
        expect(page.get_by_role("combobox", name="Node")).to_have_value("note", timeout=WAIT_MS)
        assert not errors, errors
    finally:
        page.close()


def _click_bar(page: Any, node: str) -> None:
    """Click the time line's bar of `node` (Vega draws each bar as an SVG path labelled with its tooltip)."""
    bar = page.locator(f'.vega-embed .mark-rect path[aria-label*="node: {node};"]')
    bar.scroll_into_view_if_needed()
    bar.click()


def _has(name: str) -> Any:
    import re

    return re.compile(rf"(^|\s){re.escape(name)}(\s|$)")
