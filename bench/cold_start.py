"""Cold start of the CLI: `flowstudio --help` and `flowstudio validate` on an example flow.

Run:  .venv/bin/python bench/cold_start.py
Each command is a fresh process; prints best and median wall seconds of 7 runs as JSON.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOWSTUDIO = str(Path(sys.executable).parent / "flowstudio")
COMMANDS = {
    "help": [FLOWSTUDIO, "--help"],
    "validate": [FLOWSTUDIO, "validate", str(ROOT / "flows" / "ticket-triage.yaml")],
}


def timings(command: list[str], runs: int = 7) -> list[float]:
    result = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        result.append(time.perf_counter() - start)
    return result


def main() -> None:
    report = {}
    for name, command in COMMANDS.items():
        seconds = timings(command)
        report[name] = {"best_s": round(min(seconds), 3), "median_s": round(statistics.median(seconds), 3)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
