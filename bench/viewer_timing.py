"""How fast the viewer draws: a 500-step run (its canvas and time line), a runs list of 10,000
runs, and the Experiments page of a finished 200-example batch and of a finished optimizer
search, timed in a real browser.

Run (needs Debian's chromium at /usr/bin/chromium and playwright from the dev extra):
    .venv/bin/python bench/viewer_timing.py [--repeat 5]
Prints one JSON object: browser timings (median and max over --repeat page loads, seconds from
navigation until the content is on screen; the max is the first, cold load) and the
server-side share (Python only).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from studio.app.trace_canvas import Acked, drawing, trace_graph  # noqa: E402
from studio.runtime.runner import run_flow  # noqa: E402
from studio.store import SQLiteStore  # noqa: E402
from studio.store.base import RunFilter, RunRecord  # noqa: E402
from studio.store.sqlite import _to_row  # noqa: E402
from studio.viewer import dot_svg, find_failure, load_trace, node_rows, run_dot, run_rows  # noqa: E402
from studio.viewer.timeline import chart_rows, timeline  # noqa: E402
from tests.app.browser import CHROMIUM, CHROMIUM_ARGS, studio_server  # noqa: E402
from tests.optimize.conftest import DEMO_RULES, HEADER, rows, write_jsonl  # noqa: E402

BRANCHES, DEPTH = 25, 20  # 500 nodes: 25 parallel chains of 20
RUNS = 10_000
WAIT_MS = 60_000
BATCH_EXAMPLES = 200
FRAME = 'iframe[title="studio.app.canvas.flow_canvas"]'


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


def finished_experiments(folder: Path, db: Path) -> dict[str, str]:
    """A finished batch of 200 examples and a finished optimizer search (scripted model), made by
    the CLI into the bench's store; returns their experiment ids by kind."""
    flow = folder / "classify.yaml"
    flow.write_text(HEADER.format(name="bench", rules=DEMO_RULES), encoding="utf-8")
    data = write_jsonl(folder / "reviews.jsonl", rows(BATCH_EXAMPLES, 3))
    train, dev = write_jsonl(folder / "train.jsonl", rows(12, 0)), write_jsonl(folder / "dev.jsonl", rows(16, 1))
    cli = str(Path(sys.executable).parent / "flowstudio")
    common = ["--metric", "exact", "--db", str(db)]
    subprocess.run([cli, "batch", str(flow), "--data", str(data), *common], check=True, capture_output=True)
    optimize = [cli, "optimize", str(flow), "--train", str(train), "--dev", str(dev), *common]
    out = folder / "classify.optimized.yaml"
    subprocess.run(
        [*optimize, "--budget-calls", "120", "--minibatch", "4", "--out", str(out)], check=True, capture_output=True
    )
    store = SQLiteStore(db)
    try:
        return {e.kind: e.experiment_id for e in store.list_experiments(limit=10)}
    finally:
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
            dot_svg(run_dot(loaded))
            chart_rows(timeline(loaded))
            node_rows(loaded)
            find_failure(loaded)

        def canvas_graph() -> None:
            loaded = load_trace(store, run_id)
            text = store.flow_text(run_id)
            assert loaded is not None and text is not None
            drawn = drawing(text, loaded.run.flow_path)
            assert drawn is not None
            trace_graph(drawn, loaded, selected=None, acked=Acked())

        def runs_list() -> None:
            store.flow_names()
            store.count_runs(RunFilter())
            run_rows(store.query_runs(RunFilter(), offset=5000, limit=50))

        return {
            "trace_500_steps": _timed(trace, repeat),
            "trace_500_steps_canvas_graph": _timed(canvas_graph, repeat),
            "runs_list_page_101": _timed(runs_list, repeat),
        }
    finally:
        store.close()


def browser_side(url: str, run_id: str, experiments: dict[str, str], total: int, repeat: int) -> dict[str, Any]:
    """Navigation to content-on-screen, in chromium."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/runs")  # warm-up: the first load also fetches the app's JavaScript
        expect(page.get_by_role("heading", name="Runs")).to_be_visible(timeout=WAIT_MS)

        def open_runs() -> None:
            page.goto(f"{url}/runs")
            expect(page.get_by_text(f"{total} runs match")).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_test_id("stDataFrame")).to_be_visible(timeout=WAIT_MS)

        def next_page() -> None:
            page.get_by_role("button", name="Increment").click()
            expect(page.get_by_text(f"{total} runs match; showing 50")).to_be_visible(timeout=WAIT_MS)
            page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')", timeout=WAIT_MS)

        def open_trace() -> None:
            page.goto(f"{url}/traces?run={run_id}")
            graph = page.get_by_role("img", name="the run's graph, nodes colored by status")
            expect(graph).to_be_visible(timeout=WAIT_MS)
            page.wait_for_function(
                "img => img.complete && img.naturalWidth > 0", arg=graph.element_handle(), timeout=WAIT_MS
            )
            expect(page.get_by_role("tab", name="Node", exact=True)).to_be_visible(timeout=WAIT_MS)

        canvas_times: list[float] = []
        timeline_times: list[float] = []

        def trace_timeline() -> None:
            """Only the switch is timed: from the click on "Time line" until its chart is drawn."""
            open_trace()
            start = time.perf_counter()
            page.get_by_text("Time line (500 steps)").click()
            expect(page.get_by_text("Time line: 500 steps")).to_be_visible(timeout=WAIT_MS)
            expect(page.locator(".vega-embed canvas, .vega-embed svg").first).to_be_visible(timeout=WAIT_MS)
            timeline_times.append(time.perf_counter() - start)

        def trace_canvas() -> None:
            """Only the switch is timed: from the click on "Interactive graph" until the 502 cards are drawn."""
            open_trace()
            start = time.perf_counter()
            page.get_by_text("Interactive graph").click()
            canvas = page.frame_locator(FRAME)
            root = canvas.locator(f'[data-testid=canvas-root][data-nodes="{BRANCHES * DEPTH + 2}"]')
            expect(root).to_be_attached(timeout=WAIT_MS)
            expect(canvas.locator(".react-flow__node").first).to_be_visible(timeout=WAIT_MS)
            canvas_times.append(time.perf_counter() - start)

        def settled() -> None:
            page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')", timeout=WAIT_MS)

        def open_batch() -> None:
            page.goto(f"{url}/experiments?experiment={experiments['batch']}")
            expect(page.get_by_text(f"Examples ({BATCH_EXAMPLES} runs")).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_test_id("stMetric").first).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_test_id("stDataFrame").last).to_be_visible(timeout=WAIT_MS)
            settled()

        def open_search() -> None:
            page.goto(f"{url}/experiments?experiment={experiments['optimize']}")
            expect(page.get_by_text("Candidates", exact=True)).to_be_visible(timeout=WAIT_MS)
            expect(page.locator(".vega-embed canvas, .vega-embed svg").first).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_text("What changed")).to_be_visible(timeout=WAIT_MS)
            settled()

        results = {
            "runs_list_10000_open": _timed(open_runs, repeat),
            "runs_list_10000_next_page": _timed(next_page, repeat),
            "trace_500_steps_open": _timed(open_trace, repeat),
        }
        for _ in range(repeat):
            trace_timeline()
            trace_canvas()
        for name, times in (("timeline", timeline_times), ("canvas", canvas_times)):
            results[f"trace_500_steps_{name}_switch"] = {
                "median_s": round(statistics.median(times), 3),
                "max_s": round(max(times), 3),
            }
        page.screenshot(path=str(ROOT / "test-artifacts" / "bench-trace-500.png"))
        results["experiments_batch_200_open"] = _timed(open_batch, repeat)
        page.screenshot(path=str(ROOT / "test-artifacts" / "bench-experiments-batch.png"))
        results["experiments_optimizer_open"] = _timed(open_search, repeat)
        page.screenshot(path=str(ROOT / "test-artifacts" / "bench-experiments-optimizer.png"))
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
        experiments = finished_experiments(folder, db)
        store = SQLiteStore(db)
        total = store.count_runs(RunFilter())
        store.close()
        figures: dict[str, Any] = {
            "machine": f"{platform.machine()}, {platform.python_version()}",
            "steps": len(result.steps),
            "runs": total,
            "server": server_side(db, result.run_id, args.repeat),
        }
        with studio_server(str(Path(sys.executable).parent / "flowstudio"), folder, db, folder / "studio.log") as (
            url,
            _,
        ):
            figures["browser"] = browser_side(url, result.run_id, experiments, total, args.repeat)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
