"""A studio folder with a slow scripted flow and its dataset, for the launch tests."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from studio.store import SQLiteStore
from studio.store.base import ExperimentRecord

ROOT = Path(__file__).resolve().parents[2]
QA = ROOT / "tests" / "flows" / "qa.yaml"
QA_DATA = ROOT / "tests" / "data" / "qa.jsonl"


def slow_folder(folder: Path, delay_s: float = 0.4, copies: int = 3) -> Path:
    """`folder` with qa.yaml (every reply after `delay_s`) and data/qa.jsonl (`copies` of the 4 rows)."""
    text = QA.read_text(encoding="utf-8").replace("reply:", f"delay_s: {delay_s}, reply:")
    text = text.replace("error: {kind: auth}", f"delay_s: {delay_s}, error: {{kind: auth}}")
    (folder / "qa.yaml").write_text(text, encoding="utf-8")
    (folder / "data").mkdir(exist_ok=True)
    rows = [json.loads(line) for line in QA_DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    unique = [{**row, "question": f"{row['question']} (copy {n})"} for n in range(copies) for row in rows]
    text = "".join(json.dumps(row) + "\n" for row in unique)  # distinct inputs: none is served from the cache
    (folder / "data" / "qa.jsonl").write_text(text, encoding="utf-8")
    return folder


def wait_for(db: Path, test: Callable[[ExperimentRecord], bool], timeout_s: float = 60) -> ExperimentRecord:
    """Poll the store until its newest experiment passes `test`."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        store = SQLiteStore(db)
        try:
            found = store.list_experiments(limit=1)
        finally:
            store.close()
        if found:
            last = found[0]
            if test(last):
                return last
        time.sleep(0.1)
    raise AssertionError(f"timed out; last experiment: {last}")
