"""The Editor page on a 200-node flow, in a real browser: how long it takes to open, and an edit's round trip.

A generated flow of N nodes (text.template steps with an llm.generate every tenth, wired as a
tree, no sidecar, so the first open also lays it out) is the only file in a temporary folder;
`flowstudio studio` serves it on 127.0.0.1 and Debian's chromium opens the Editor page.

- open: from `page.goto` until the canvas holds all N+2 nodes (the component reports its
  count in `data-nodes`) and a node is on screen; first in a fresh server, then in fresh pages
  (new browser sessions: the editor is built again server-side, imports are warm);
- add: click a palette entry until the new node is on screen (event → Python edit →
  revalidation → new graph → React Flow);
- connect: drag from the first added node's output to a second one's input; from the release
  until the canvas shows one more edge;
- server side, in-process: `Editor(path)`, `editor.graph()`, one prompt edit and the graph after it.

Goals (issue #8): open < 3 s, an edit's round trip < 1 s. Prints ONE JSON object.

Run (from the repository root):
    .venv/bin/python bench/editor_timing.py
    .venv/bin/python bench/editor_timing.py --nodes 200 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from studio.editor.editor import Editor  # noqa: E402
from tests.app.browser import CHROMIUM, chromium, studio_server  # noqa: E402
from tests.app.editor_browser import big_flow, canvas, drag, port  # noqa: E402
from tests.conftest import FLOWSTUDIO  # noqa: E402

TIMEOUT_MS = 60_000


def _root(page: Any) -> Any:
    return canvas(page).get_by_test_id("canvas-root")


def _open(page: Any, url: str, nodes: int) -> float:
    from playwright.sync_api import expect

    start = time.perf_counter()
    page.goto(f"{url}/editor")
    expect(_root(page)).to_have_attribute("data-nodes", str(nodes + 2), timeout=TIMEOUT_MS)
    expect(canvas(page).locator(".react-flow__node").first).to_be_visible(timeout=TIMEOUT_MS)
    return time.perf_counter() - start


def _add(page: Any, node_id: str) -> float:
    from playwright.sync_api import expect

    start = time.perf_counter()
    canvas(page).get_by_test_id("palette-item-text.template").click()
    expect(canvas(page).get_by_test_id(f"node-{node_id}")).to_be_visible(timeout=TIMEOUT_MS)
    return time.perf_counter() - start


def _connect(page: Any, source_id: str, target_id: str) -> float:
    from playwright.sync_api import expect

    edges = int(_root(page).get_attribute("data-edges"))
    source, target = port(page, source_id, "out", "text"), port(page, target_id, "in", "text")
    drag(page, source, target, release=False)
    start = time.perf_counter()
    page.mouse.up()
    expect(_root(page)).to_have_attribute("data-edges", str(edges + 1), timeout=TIMEOUT_MS)
    return time.perf_counter() - start


def browser_figures(folder: Path, nodes: int, repeat: int) -> dict[str, Any]:
    with (
        studio_server(FLOWSTUDIO, folder, folder / "bench.db", folder / "studio.log") as (url, _),
        chromium() as browser,
    ):
        opens, adds, connects = [], [], []
        for _ in range(repeat):
            page = browser.new_page(viewport={"width": 1600, "height": 1100})
            opens.append(_open(page, url, nodes))
            adds += [_add(page, "template"), _add(page, "template_2")]  # each session edits the file as on disk
            connects.append(_connect(page, "template", "template_2"))
            page.close()
    return {
        "open_first_s": round(opens[0], 3),
        "open_median_s": round(statistics.median(opens[1:] or opens), 3),
        "add_node_median_s": round(statistics.median(adds), 3),
        "connect_median_s": round(statistics.median(connects), 3),
        "opens_s": [round(t, 3) for t in opens],
        "adds_s": [round(t, 3) for t in adds],
        "connects_s": [round(t, 3) for t in connects],
    }


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
    return {
        "editor_open_s": round(opened - start, 3),
        "graph_s": round(drawn - opened, 3),
        "prompt_edit_s": round(edited - drawn, 3),
        "graph_after_edit_s": round(redrawn - edited, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if not CHROMIUM.exists():
        sys.exit(f"needs Debian's chromium at {CHROMIUM}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = folder / "big.yaml"
        path.write_text(big_flow(args.nodes), encoding="utf-8")
        server = server_figures(path)
        figures = browser_figures(folder, args.nodes, args.repeat)
    print(json.dumps({"nodes": args.nodes, "repeat": args.repeat, "browser": figures, "server": server}, indent=2))


if __name__ == "__main__":
    main()
