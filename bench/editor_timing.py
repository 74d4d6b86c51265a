"""The Editor page on a 200-node flow, in a real browser: how long it takes to open, and an edit's round trip.

A generated flow of N nodes (text.template steps with an llm.generate every tenth, wired as a
tree, no sidecar, so the first open also lays it out) is the only file in a temporary folder;
`flowstudio studio` serves it on 127.0.0.1 and Debian's chromium opens the Editor page.

- open: from `page.goto` until the canvas holds all N+2 nodes (the component reports its
  count in `data-nodes`) and a node is on screen; first in a fresh server, then in fresh pages
  (new browser sessions: the editor is built again server-side, imports are warm); with the
  median time of each phase of the fresh-page opens (`PHASES`);
- add: click a palette entry until the new card is on screen (the canvas draws it at once), and
  until Python's graph holds it (event → Python edit → revalidation → new graph → React Flow);
- connect: drag from the first added node's output to a second one's input; from the release
  until the canvas shows one more edge, and until Python's graph holds it; both timed in the
  canvas frame on its own clock (`PROBE`);
- open from Home (issue #19): a fresh page on Home, then the big flow's card's Open: from the click
  until the canvas holds all N+2 nodes, timed in the page (`HOME_PROBE`);
- server side, in-process: `Editor(path)`, `editor.graph()`, one prompt edit (the first edit also
  parses the round-trip document) and the graph after it, then adding a node and wiring it;
- build from empty (issue #19), at 1440x900: open an empty flow file, then with the mouse add five
  text.template nodes from the palette, wire `$inputs.+` to the first (a new flow input), chain
  the five, give the third a `when` guard in the inspector (Apply), wire the last to `$outputs.+`
  and press Ctrl+S; each gesture is timed from the action until the canvas (or the saved file)
  shows its result.
- big flows (issue 38, `--part big`): in a fresh server, a cold Home (from `page.goto` until a flow
  card's Open is on screen, the server's first page); then in fresh pages at 1440x900, the 200-node
  tree opened by URL, and a 200-node chain opened from Home (a click on its card's Open), each until
  the canvas holds all its cards at a readable zoom (>= 0.7) with the flow's inputs card inside the
  pane; on the chain, the Inspector's open (a click on a card until its heading is on screen), a
  palette add and a wire, as above.
- first token (issue #19): a one-node flow on the embedded model (local/smollm2) in the Editor's
  Playground; after one warm-up run (the studio loads the model), from the click on Start until
  the running node shows streamed text on the canvas, on new inputs each time (no cache hit);
  with the time until the node finished, to show that the first words came before the reply.

Goals: open < 3 s (issue #8; < 2 s median, issue #19), an edit's round trip < 1 s
(add/connect/apply < 0.5 s, issue #19), first streamed token on screen < 1 s after Start on the
warm embedded model (issue #19); a 200-node flow open to a readable view < 2 s, add and wire on it
< 0.5 s, the Inspector's open < 0.5 s (issue 38). Prints ONE JSON object.

Run (from the repository root):
    .venv/bin/python bench/editor_timing.py
    .venv/bin/python bench/editor_timing.py --nodes 200 --repeat 5
    .venv/bin/python bench/editor_timing.py --part big --repeat 3   # issue 38's figures alone
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from studio.editor.document import new_flow_text  # noqa: E402
from studio.editor.drafts import draft_path  # noqa: E402
from studio.editor.editor import Editor  # noqa: E402
from tests.app.browser import CHROMIUM, chromium, settled, studio_server  # noqa: E402
from tests.app.editor_browser import CANVAS_FRAME, big_flow, canvas, chain_flow, confirmed, drag, port  # noqa: E402
from tests.conftest import FLOWSTUDIO  # noqa: E402

TIMEOUT_MS = 60_000


def _root(page: Any) -> Any:
    return canvas(page).get_by_test_id("canvas-root")


PHASES = ("page_loaded", "toolbar", "canvas_frame", "canvas_drawn", "nodes_in")
"""Where an open's time goes, each from `page.goto`: Streamlit's page loaded (its JavaScript run),
the Editor's toolbar on screen (the session started and the page script ran as far as it), the
canvas's frame attached (the script reached the canvas), the component drawing (its script ran
and got the graph), and all N+2 nodes in its state."""


def _open(page: Any, url: str, nodes: int, phases: dict[str, list[float]] | None = None) -> float:
    from playwright.sync_api import expect

    start = time.perf_counter()
    marks = [start]
    page.goto(f"{url}/editor")
    marks.append(time.perf_counter())
    page.get_by_role("combobox", name="Flow", exact=True).wait_for(timeout=TIMEOUT_MS)
    marks.append(time.perf_counter())
    page.locator(CANVAS_FRAME).wait_for(state="attached", timeout=TIMEOUT_MS)
    marks.append(time.perf_counter())
    _root(page).wait_for(timeout=TIMEOUT_MS)
    marks.append(time.perf_counter())
    expect(_root(page)).to_have_attribute("data-nodes", str(nodes + 2), timeout=TIMEOUT_MS)
    marks.append(time.perf_counter())
    expect(canvas(page).locator(".react-flow__node").first).to_be_visible(timeout=TIMEOUT_MS)
    for name, mark in zip(PHASES, marks[1:], strict=True) if phases is not None else ():
        phases.setdefault(name, []).append(mark - start)
    return time.perf_counter() - start


HOME_PROBE = """([nodes, selector]) => {
  const probe = { click: null, frame: null, done: null };
  window.__open = probe;
  document.addEventListener("click", () => { probe.click = performance.now(); }, { capture: true, once: true });
  const frame = () => document.querySelector(selector);
  const tick = () => {
    const doc = frame()?.contentDocument;
    if (probe.click !== null && doc && probe.frame === null) probe.frame = performance.now();
    const root = doc?.querySelector('[data-testid="canvas-root"]');
    if (probe.click !== null && root?.getAttribute("data-nodes") === String(nodes) && doc.querySelector(".react-flow__node")) {
      probe.done = performance.now();
      const inner = frame().contentWindow.performance;  // the component's own marks, on this clock
      const offset = inner.timeOrigin - performance.timeOrigin - probe.click;
      probe.marks = Object.fromEntries(inner.getEntriesByType("mark").map((m) => [m.name, offset + m.startTime]));
      return;
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""
"""Installed in the Home page before a card's Open is clicked: from the click to the first animation
frame in which the Editor's canvas holds all the flow's nodes (its frame is the same origin), with
the component's `performance.mark`s by then (`canvas:script`: its bundle started; `canvas:args`: the
graph came) on the same clock."""


def _open_from_home(page: Any, url: str, nodes: int) -> tuple[float, float, dict[str, float]]:
    """A fresh page on Home, then the big flow's Open: seconds to the canvas frame, to all nodes in,
    and to each of the component's marks."""
    page.goto(url)
    button = page.locator(".st-key-flow_card_0").get_by_role("button", name="Open")
    button.wait_for(timeout=TIMEOUT_MS)
    settled(page)
    page.evaluate(HOME_PROBE, [nodes + 2, CANVAS_FRAME])
    button.click()
    page.wait_for_function("window.__open.done !== null", timeout=TIMEOUT_MS)
    probe = page.evaluate("window.__open")
    marks = {name: at / 1000 for name, at in probe["marks"].items()}
    return (probe["frame"] - probe["click"]) / 1000, (probe["done"] - probe["click"]) / 1000, marks


PROBE = """(shown) => {
  const probe = { start: null, shown: null, confirmed: null };
  window.__probe = probe;
  const mark = () => { if (probe.start === null) probe.start = performance.now(); };
  document.addEventListener("click", mark, { capture: true, once: true });
  document.addEventListener("mouseup", mark, { capture: true, once: true });
  const root = () => document.querySelector('[data-testid="canvas-root"]');
  const tick = () => {
    const now = performance.now();
    if (probe.start !== null && probe.shown === null && new Function("root", shown)(root())) probe.shown = now;
    if (probe.shown !== null && root().getAttribute("data-unconfirmed") === "0") probe.confirmed = now;
    if (probe.confirmed === null) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""
"""Installed in the canvas frame before a gesture: from the gesture's event (the click or the
mouse-up, as the frame receives it) to the first animation frame that has its result in the DOM
(`shown`: a JavaScript function body of `root`, the canvas root), and to the first one where Python's
graph holds it too (the root's `data-unconfirmed` is 0). Timed in the page, on its own clock, because
Playwright's `expect` polls at 100, 250, 500 ms and more, which would round a 30 ms gesture up."""


def _gesture(page: Any, shown: str, act: Any) -> tuple[float, float]:
    """(seconds until the result is on screen, seconds until Python's graph has it) for one gesture."""
    frame = page.locator(CANVAS_FRAME).element_handle().content_frame()
    frame.evaluate(PROBE, shown)
    act()
    try:
        frame.wait_for_function("window.__probe.confirmed !== null", timeout=TIMEOUT_MS)
    except Exception:
        print(
            "PROBE",
            frame.evaluate("window.__probe"),
            _root(page).evaluate("e => [...e.attributes].map(a => a.name + '=' + a.value)"),
            file=sys.stderr,
        )
        raise
    probe = frame.evaluate("window.__probe")
    return (probe["shown"] - probe["start"]) / 1000, (probe["confirmed"] - probe["start"]) / 1000


def _add(page: Any, node_id: str) -> tuple[float, float]:
    """A palette click: until the new card is on screen, and until Python's graph has the node."""
    shown = f"return root.querySelector('[data-testid=\"node-{node_id}\"]') !== null"
    return _gesture(page, shown, canvas(page).get_by_test_id("palette-item-text.template").click)


def _connect(page: Any, source_id: str, target_id: str) -> tuple[float, float]:
    """A wire dropped on a port, from the release: until the canvas shows one more edge, and until
    Python's graph has it."""
    confirmed(page)  # ports measured on Python's cards, not on ones it is about to replace
    edges = int(_root(page).get_attribute("data-edges"))
    source, target = port(page, source_id, "out", "text"), port(page, target_id, "in", "text")
    drag(page, source, target, release=False)
    shown = (
        f"return Number(root.getAttribute('data-edges')) > {edges}"  # drawn: only the edges on screen are in the DOM
    )
    return _gesture(page, shown, page.mouse.up)


def _timed(action: Any, done: Any) -> float:
    start = time.perf_counter()
    action()
    done()
    return round(time.perf_counter() - start, 3)


def build_from_empty(page: Any, path: Path) -> dict[str, Any]:
    """Five nodes, six wires (one makes the flow input, one the output), a guard, save: each gesture's seconds."""
    from playwright.sync_api import expect

    frame = canvas(page)
    root = _root(page)
    times: dict[str, Any] = {}
    page.get_by_role("combobox", name="Flow", exact=True).click()
    times["open_empty"] = _timed(
        lambda: page.get_by_role("option", name=path.name, exact=True).click(),
        lambda: expect(root).to_have_attribute("data-nodes", "2", timeout=TIMEOUT_MS),
    )
    ids = ["template", "template_2", "template_3", "template_4", "template_5"]
    for number, node_id in enumerate(ids):
        times[f"add_{number + 1}"] = _timed(
            lambda: frame.get_by_test_id("palette-item-text.template").click(),
            lambda node_id=node_id: expect(frame.get_by_test_id(f"node-{node_id}")).to_be_visible(timeout=TIMEOUT_MS),
        )
        frame.get_by_test_id("canvas-fit").click()
    wires = [(("$inputs", "+"), (ids[0], "text"))] + [((a, "text"), (b, "text")) for a, b in itertools.pairwise(ids)]
    wires.append(((ids[-1], "text"), ("$outputs", "+")))
    for number, ((source, out), (target, into)) in enumerate(wires):
        confirmed(page)
        edges = int(root.get_attribute("data-edges"))
        drag(page, port(page, source, "out", out), port(page, target, "in", into), release=False)
        times[f"wire_{number + 1}"] = _timed(
            page.mouse.up,
            lambda edges=edges: expect(root).to_have_attribute("data-edges", str(edges + 1), timeout=TIMEOUT_MS),
        )
        frame.get_by_test_id("canvas-fit").click()
    frame.get_by_test_id(f"node-{ids[2]}").click()
    expect(page.get_by_role("heading", name=ids[2])).to_be_visible(timeout=TIMEOUT_MS)
    page.get_by_role("textbox", name="when", exact=True).fill(f"{ids[1]}.text != ''")
    times["guard_apply"] = _timed(
        lambda: page.get_by_role("button", name="Apply", exact=True).first.click(),
        lambda: expect(frame.get_by_test_id(f"guard-{ids[2]}")).to_be_visible(timeout=TIMEOUT_MS),
    )

    def saved() -> None:
        deadline = time.monotonic() + TIMEOUT_MS / 1000
        while not all(part in path.read_text(encoding="utf-8") for part in ("when:", f"${ids[-1]}.text")):
            if time.monotonic() > deadline:
                raise TimeoutError("the flow was not saved")
            time.sleep(0.02)

    times["save_ctrl_s"] = _timed(lambda: page.keyboard.press("Control+s"), saved)
    gestures = [v for k, v in times.items() if k.startswith(("add_", "wire_", "guard_"))]
    times["gesture_median_s"] = round(statistics.median(gestures), 3)
    times["gesture_max_s"] = max(gestures)
    times["total_s"] = round(sum(v for k, v in times.items() if not k.startswith("gesture_")), 3)
    return times


STREAM_FLOW = """flowstudio: 1
name: stream
inputs:
  topic: {type: str}
outputs:
  story: $story.text
models:
  default: {model: local/smollm2, temperature: 0, max_tokens: 160}
nodes:
  story:
    type: llm.generate
    inputs: {topic: $inputs.topic}
    config: {prompt: "Write a long story about {{ topic }}."}
"""
"""The first-token flow: one LLM node on the embedded model, asked for a long reply."""
TOPICS = ("a lighthouse", "a red kite", "the tide", "a lost key", "an old map", "a quiet town", "snow")


def _start_run(page: Any, topic: str) -> None:
    page.get_by_label("topic (str)").fill(topic)
    page.get_by_role("button", name="Start").click()


def first_token(page: Any, runs: int) -> dict[str, Any]:
    """Open stream.yaml, one warm-up run, then `runs` timed ones: Start → streamed text on the running node."""

    from playwright.sync_api import expect

    frame = canvas(page)
    page.get_by_role("combobox", name="Flow", exact=True).click()
    page.get_by_role("option", name="stream.yaml", exact=True).click()
    expect(frame.get_by_test_id("node-story")).to_be_visible(timeout=TIMEOUT_MS)
    page.get_by_role("button", name="Run", exact=True).click()
    node = frame.get_by_test_id("node-story")
    done = re.compile(r"\bstatus-succeeded\b")
    _start_run(page, TOPICS[0])  # warm-up: the studio's process loads the model once
    expect(node).to_have_class(done, timeout=3 * TIMEOUT_MS)  # 160 tokens on a busy machine
    streamed = frame.locator('[data-testid="node-story"].status-running [data-testid="preview-story"]')
    firsts, ends = [], []
    for topic in TOPICS[1 : runs + 1]:
        start = time.perf_counter()
        _start_run(page, topic)
        expect(streamed).to_have_text(re.compile(r"\S"), timeout=TIMEOUT_MS)
        firsts.append(time.perf_counter() - start)
        expect(node).to_have_class(done, timeout=3 * TIMEOUT_MS)  # 160 tokens on a busy machine
        ends.append(time.perf_counter() - start)
    return {
        "first_token_median_s": round(statistics.median(firsts), 3),
        "node_done_median_s": round(statistics.median(ends), 3),
        "first_tokens_s": [round(t, 3) for t in firsts],
        "node_done_s": [round(t, 3) for t in ends],
    }


def browser_figures(folder: Path, nodes: int, repeat: int) -> dict[str, Any]:
    with (
        studio_server(FLOWSTUDIO, folder, folder / "bench.db", folder / "studio.log") as (url, _),
        chromium() as browser,
    ):
        opens, adds, connects = [], [], []
        phases: dict[str, list[float]] = {}
        for number in range(repeat):
            _forget_drafts(folder)
            page = browser.new_page(viewport={"width": 1600, "height": 1100})
            opens.append(_open(page, url, nodes, phases if number > 0 or repeat == 1 else None))
            adds += [_add(page, "template"), _add(page, "template_2")]  # each session edits the file as on disk
            connects.append(_connect(page, "template", "template_2"))
            page.close()
        _forget_drafts(folder)
        from_home = []
        for _ in range(repeat):
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            from_home.append(_open_from_home(page, url, nodes))
            page.close()
        _forget_drafts(folder)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"{url}/editor")
        expect_open = _root(page)
        from playwright.sync_api import expect

        expect(expect_open).to_have_attribute("data-nodes", str(nodes + 2), timeout=TIMEOUT_MS)
        build = build_from_empty(page, folder / "empty.yaml")
        page.close()
        _forget_drafts(folder)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"{url}/editor")
        expect(_root(page)).to_have_attribute("data-nodes", str(nodes + 2), timeout=TIMEOUT_MS)
        streaming = first_token(page, max(repeat, 3))
        page.close()
    return {
        "build_from_empty": build,
        "first_token": streaming,
        "open_first_s": round(opens[0], 3),
        "open_median_s": round(statistics.median(opens[1:] or opens), 3),
        "open_phases_median_s": {name: round(statistics.median(times), 3) for name, times in phases.items()},
        "open_from_home_median_s": round(statistics.median(done for _, done, _ in from_home), 3),
        "open_from_home_s": [[round(frame, 3), round(done, 3)] for frame, done, _ in from_home],
        "open_from_home_marks_median_s": _mark_medians([marks for _, _, marks in from_home]),
        "add_node_median_s": round(statistics.median(shown for shown, _ in adds), 3),
        "add_node_confirmed_median_s": round(statistics.median(confirmed for _, confirmed in adds), 3),
        "connect_median_s": round(statistics.median(shown for shown, _ in connects), 3),
        "connect_confirmed_median_s": round(statistics.median(confirmed for _, confirmed in connects), 3),
        "opens_s": [round(t, 3) for t in opens],
        "adds_s": [[round(t, 3) for t in pair] for pair in adds],
        "connects_s": [[round(t, 3) for t in pair] for pair in connects],
    }


READABLE_ZOOM = 0.7
"""The least zoom at which a card's smallest text (12 px) is 8 px or more on screen."""
READABLE = """([selector, nodes, least]) => {
  const frame = document.querySelector(selector);
  const doc = frame?.contentDocument;
  const root = doc?.querySelector('[data-testid="canvas-root"]');
  const viewport = doc?.querySelector('.react-flow__viewport');
  const inputs = doc?.querySelector('[data-testid="node-$inputs"]');
  if (root?.getAttribute("data-nodes") !== String(nodes) || !viewport || !inputs) return false;
  const zoom = new DOMMatrix(frame.contentWindow.getComputedStyle(viewport).transform).a;
  const box = inputs.getBoundingClientRect();
  const pane = doc.querySelector('.react-flow').getBoundingClientRect();
  return zoom >= least && box.left >= pane.left && box.top >= pane.top && box.right <= pane.right && box.bottom <= pane.bottom;
}"""
"""In the page, on the canvas frame of this script run (it can be swapped while the page loads): all
the flow's cards in, at a readable zoom, the inputs card inside the pane."""


def _cold_home(page: Any, url: str) -> float:
    """Seconds from `page.goto` on Home until a flow card's Open is on screen."""
    start = time.perf_counter()
    page.goto(url)
    page.locator(".st-key-flow_card_0").get_by_role("button", name="Open").wait_for(timeout=TIMEOUT_MS)
    return time.perf_counter() - start


def _open_readable(page: Any, url: str, name: str, nodes: int) -> float:
    """Seconds from `page.goto` on the Editor with `name` until the readable opening view (`READABLE`)."""
    start = time.perf_counter()
    page.goto(f"{url}/editor?flow={name}")
    page.wait_for_function(READABLE, arg=[CANVAS_FRAME, nodes + 2, READABLE_ZOOM], polling="raf", timeout=TIMEOUT_MS)
    return time.perf_counter() - start


def _open_readable_from_home(page: Any, url: str, name: str, nodes: int) -> float:
    """A fresh page on Home, then the flow card's Open: seconds from the click until the readable
    opening view (`READABLE`), the way the studio opens a flow."""
    page.goto(url)
    card = page.locator("[class*='st-key-flow_card_']", has=page.get_by_text(name.removesuffix(".yaml"), exact=True))
    button = card.first.get_by_role("button", name="Open")
    button.wait_for(timeout=TIMEOUT_MS)
    settled(page)
    start = time.perf_counter()
    button.click()
    page.wait_for_function(READABLE, arg=[CANVAS_FRAME, nodes + 2, READABLE_ZOOM], polling="raf", timeout=TIMEOUT_MS)
    return time.perf_counter() - start


def _inspector(page: Any, node_id: str) -> float:
    """Seconds from a click on a card until its Inspector's heading is on screen."""
    settled(page)
    heading = page.get_by_role("heading", name=node_id, exact=True)
    start = time.perf_counter()
    canvas(page).get_by_test_id(f"node-{node_id}").click(position={"x": 40, "y": 12})
    heading.wait_for(timeout=TIMEOUT_MS)
    return time.perf_counter() - start


def _forget_drafts(folder: Path) -> None:
    """Drop the drafts a page's unsaved edits left (`studio/editor/drafts.py`): each page times a
    fresh open, not the offer of an earlier visit's edits (whose answer redraws the canvas)."""
    for flow in folder.glob("*.yaml"):
        draft_path(flow).unlink(missing_ok=True)


def big_flow_figures(folder: Path, nodes: int, repeat: int) -> dict[str, Any]:
    """Issue 38's figures on a fresh server: cold Home, readable opens, Inspector, add and wire."""
    with (
        studio_server(FLOWSTUDIO, folder, folder / "big.db", folder / "big-studio.log") as (url, _),
        chromium() as browser,
    ):
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        cold_home = _cold_home(page, url)
        page.close()
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        warm_home = _cold_home(page, url)
        page.close()
        chain, tree, inspector, adds, connects = [], [], [], [], []
        for _ in range(repeat):
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            tree.append(_open_readable(page, url, "big.yaml", nodes))
            page.close()
            _forget_drafts(folder)
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            chain.append(_open_readable_from_home(page, url, "chain.yaml", nodes))
            inspector += [_inspector(page, "c1"), _inspector(page, "c2")]
            settled(page)  # the Inspector's rerun done: the canvas frame is this run's
            adds += [_add(page, "template"), _add(page, "template_2")]  # each session edits the file as on disk
            connects.append(_connect(page, "c6", "template_2"))  # not from `template`: at the pane's edge it auto-pans
            page.close()

    def median(times: list[float]) -> float:
        return round(statistics.median(times), 3)

    return {
        "cold_home_s": round(cold_home, 3),
        "warm_home_s": round(warm_home, 3),
        "open_chain_from_home_readable_first_s": round(chain[0], 3),
        "open_chain_from_home_readable_median_s": median(chain[1:] or chain),
        "open_tree_readable_first_s": round(tree[0], 3),
        "open_tree_readable_median_s": median(tree[1:] or tree),
        "inspector_open_median_s": median(inspector),
        "add_node_median_s": median([shown for shown, _ in adds]),
        "add_node_confirmed_median_s": median([done for _, done in adds]),
        "connect_median_s": median([shown for shown, _ in connects]),
        "connect_confirmed_median_s": median([done for _, done in connects]),
        "opens_chain_s": [round(t, 3) for t in chain],
        "opens_tree_s": [round(t, 3) for t in tree],
        "inspector_opens_s": [round(t, 3) for t in inspector],
        "adds_s": [[round(t, 3) for t in pair] for pair in adds],
        "connects_s": [[round(t, 3) for t in pair] for pair in connects],
    }


def _mark_medians(opens: list[dict[str, float]]) -> dict[str, float]:
    """Per component mark, its median time over the opens that reached it."""
    names = sorted({name for marks in opens for name in marks})
    return {name: round(statistics.median(m[name] for m in opens if name in m), 3) for name in names}


def server_figures(path: Path) -> dict[str, float]:
    """The Python side of the same work, in-process (after one warm-up open for imports)."""
    Editor(path).graph()
    start = time.perf_counter()
    editor = Editor(path)
    opened = time.perf_counter()
    editor.graph()
    drawn = time.perf_counter()
    editor.edit_config("n5", {"prompt": "Changed {{ text }}"})
    edited = time.perf_counter()
    editor.graph()
    redrawn = time.perf_counter()
    editor.add_node("text.template")
    added = time.perf_counter()
    editor.connect("n3", "text", "template", "text")
    connected = time.perf_counter()
    return {
        "editor_open_s": round(opened - start, 3),
        "graph_s": round(drawn - opened, 3),
        "prompt_edit_s": round(edited - drawn, 3),
        "graph_after_edit_s": round(redrawn - edited, 3),
        "add_node_s": round(added - redrawn, 3),
        "connect_s": round(connected - added, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--part", choices=("all", "big"), default="all", help="big: issue 38's big-flow figures alone")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        sys.exit(f"needs Debian's chromium at {CHROMIUM}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = folder / "big.yaml"
        path.write_text(big_flow(args.nodes), encoding="utf-8")
        (folder / "empty.yaml").write_text(new_flow_text("empty"), encoding="utf-8")
        (folder / "stream.yaml").write_text(STREAM_FLOW, encoding="utf-8")
        server = server_figures(path)
        big = Path(tempfile.mkdtemp(prefix="bigflows-"))  # apart: the folder above lists its flows recursively
        (big / "big.yaml").write_text(big_flow(args.nodes), encoding="utf-8")
        (big / "chain.yaml").write_text(chain_flow(args.nodes), encoding="utf-8")
        try:
            figures = {"big_flows": big_flow_figures(big, args.nodes, args.repeat)}
        finally:
            shutil.rmtree(big, ignore_errors=True)
        if args.part == "all":
            figures |= browser_figures(folder, args.nodes, args.repeat)
    print(json.dumps({"nodes": args.nodes, "repeat": args.repeat, "browser": figures, "server": server}, indent=2))


if __name__ == "__main__":
    main()
