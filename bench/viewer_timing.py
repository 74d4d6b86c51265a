"""How fast the trace viewer draws: a 500-step run and a runs list of 10,000 runs, timed in a real browser.

Run (needs Debian's chromium at /usr/bin/chromium and playwright from the dev extra):
    .venv/bin/python bench/viewer_timing.py [--repeat 5]
Prints one JSON object: browser timings (median and max over --repeat page loads, seconds from
navigation until the content is on screen) and the server-side share (Python only).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from studio.runtime.runner import run_flow  # noqa: E402
from studio.store import SQLiteStore  # noqa: E402
from studio.store.base import RunFilter, RunRecord  # noqa: E402
from studio.store.sqlite import _to_row  # noqa: E402
from studio.viewer import find_failure, load_trace, node_rows, run_dot, run_rows  # noqa: E402
from tests.app.browser import CHROMIUM, CHROMIUM_ARGS, studio_server  # noqa: E402

BRANCHES, DEPTH = 25, 20  # 500 nodes: 25 parallel chains of 20
RUNS = 10_000
WAIT_MS = 60_000


def big_flow() -> str:
    """25 chains of 20 nodes; every fifth node calls the scripted model."""
    lines = [
        "flowstudio: 1",
        "name: big",
        "inputs: {seed: {type: str}}",
        "models:",
        "  default: {model: scripted, script: [{reply: ok}], input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}",
        "nodes:",
    ]
    for branch in range(BRANCHES):
        for depth in range(DEPTH):
            node = f"b{branch}_n{depth}"
            source = "$inputs.seed" if depth == 0 else f"$b{branch}_n{depth - 1}.text"
            if depth % 5 == 4:
                lines.append(
                    f'  {node}: {{type: llm.generate, inputs: {{x: {source}}}, config: {{prompt: "step {{{{ x }}}}"}}}}'
                )
            else:
                lines.append(
                    f'  {node}: {{type: text.template, inputs: {{x: {source}}}, config: {{template: "{{{{ x }}}}."}}}}'
                )
    return "\n".join(lines) + "\n"


def many_runs(db: Path) -> None:
    """10,000 run rows in one transaction, over three flows and every status."""
    store = SQLiteStore(db)
    statuses = ["succeeded", "failed", "waiting"]
    with store.transaction() as conn:
        for number in range(RUNS):
            record = RunRecord(
                run_id=f"bulk{number:05d}", flow=f"flow-{number % 3}", flow_path=None, flow_hash="h",
                inputs={"q": f"question {number}"}, status=statuses[number % 3],  # type: ignore[arg-type]
                started_at=f"2026-01-{1 + number % 28:02d}T{number % 24:02d}:00:00.{number:06d}+00:00",
                ended_at=f"2026-01-{1 + number % 28:02d}T{number % 24:02d}:00:01.{number:06d}+00:00",
                tokens=number % 100, cost_usd=number / 1e6, steps=3,
            )  # fmt: skip
            row = _to_row(record)
            row["flow_text"] = None
            columns = ", ".join(row)
            conn.execute(f"INSERT INTO runs ({columns}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    store.close()


def _timed(action: Callable[[], Any], repeat: int) -> dict[str, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return {"median_s": round(statistics.median(times), 3), "max_s": round(max(times), 3)}


def server_side(db: Path, run_id: str, repeat: int) -> dict[str, Any]:
    """The Python share of each page: queries and drawing, no browser."""
    store = SQLiteStore(db)
    try:

        def trace() -> None:
            loaded = load_trace(store, run_id)
            assert loaded is not None
            run_dot(loaded)
            node_rows(loaded)
            find_failure(loaded)

        def runs_list() -> None:
            store.flow_names()
            store.count_runs(RunFilter())
            run_rows(store.query_runs(RunFilter(), offset=5000, limit=50))

        return {"trace_500_steps": _timed(trace, repeat), "runs_list_page_101": _timed(runs_list, repeat)}
    finally:
        store.close()


def browser_side(url: str, run_id: str, repeat: int) -> dict[str, Any]:
    """Navigation to content-on-screen, in chromium."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/runs")  # warm-up: the first load also fetches the app's JavaScript
        expect(page.get_by_role("heading", name="Runs")).to_be_visible(timeout=WAIT_MS)

        def open_runs() -> None:
            page.goto(f"{url}/runs")
            expect(page.get_by_text(f"{RUNS + 1} runs match")).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_test_id("stDataFrame")).to_be_visible(timeout=WAIT_MS)

        def next_page() -> None:
            page.get_by_role("button", name="Increment").click()
            expect(page.get_by_text(f"{RUNS + 1} runs match; showing 50")).to_be_visible(timeout=WAIT_MS)
            page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')", timeout=WAIT_MS)

        def open_trace() -> None:
            page.goto(f"{url}/traces?run={run_id}")
            graph = page.get_by_role("img", name="the run's graph, nodes colored by status")
            expect(graph).to_be_visible(timeout=WAIT_MS)
            page.wait_for_function(
                "img => img.complete && img.naturalWidth > 0", arg=graph.element_handle(), timeout=WAIT_MS
            )
            expect(page.get_by_role("tab", name="Node", exact=True)).to_be_visible(timeout=WAIT_MS)

        results = {
            "runs_list_10000_open": _timed(open_runs, repeat),
            "runs_list_10000_next_page": _timed(next_page, repeat),
            "trace_500_steps_open": _timed(open_trace, repeat),
        }
        page.screenshot(path=str(ROOT / "test-artifacts" / "bench-trace-500.png"))
        browser.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = folder / "bench.db"
        flow = folder / "big.yaml"
        flow.write_text(big_flow())
        result = run_flow(flow, {"seed": "go"}, db=db)
        assert result.status == "succeeded", result.error
        many_runs(db)
        figures: dict[str, Any] = {
            "machine": f"{platform.machine()}, {platform.python_version()}",
            "steps": len(result.steps),
            "runs": RUNS + 1,
            "server": server_side(db, result.run_id, args.repeat),
        }
        with studio_server(str(Path(sys.executable).parent / "flowstudio"), folder, db, folder / "studio.log") as (
            url,
            _,
        ):
            figures["browser"] = browser_side(url, result.run_id, args.repeat)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
