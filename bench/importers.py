"""Importers: the share of fixture flows that import and validate, and of nodes converted natively.

Imports every Prompt flow folder under tests/importers/fixtures/promptflow/ and every Dify app
under tests/importers/fixtures/dify/ (fixtures written in the shape of each tool's public
examples), writes each flow to a scratch folder and validates it as `flowstudio validate` does.

Usage: .venv/bin/python -m bench.importers [--json]
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from studio.errors import FlowError
from studio.importers import import_dify, import_promptflow, write_import

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "importers" / "fixtures"


def measure(source: str) -> dict[str, object]:
    """Import every fixture of `source` (promptflow or dify): flows and nodes, by outcome."""
    if source == "promptflow":
        items, importer = sorted(p for p in (FIXTURES / "promptflow").iterdir() if p.is_dir()), import_promptflow
    else:
        items, importer = sorted((FIXTURES / "dify").glob("*.yml")), import_dify
    valid, nodes, native, approximated = 0, 0, 0, 0
    with tempfile.TemporaryDirectory() as scratch:
        for i, item in enumerate(items):
            imported = importer(item)
            nodes += len(imported.report.nodes)
            native += imported.report.count("converted")
            approximated += imported.report.count("approximated")
            if not imported.report.complete:
                continue
            try:
                write_import(imported, Path(scratch) / f"flow{i}" / "flow.yaml")
            except FlowError:
                continue
            valid += 1
    return {
        "source": source,
        "flows": len(items),
        "import_and_validate": valid,
        "share_valid": round(valid / len(items), 3),
        "nodes": nodes,
        "native": native,
        "approximated": approximated,
        "share_native": round(native / nodes, 3),
    }


def main() -> None:
    results = [measure("promptflow"), measure("dify")]
    if "--json" in sys.argv:
        print(json.dumps(results, indent=2))
        return
    for r in results:
        print(
            f"{r['source']:<11} {r['import_and_validate']}/{r['flows']} flows import and validate ({r['share_valid']:.0%}); "
            f"{r['native']}/{r['nodes']} nodes native ({r['share_native']:.0%}), {r['approximated']} approximated"
        )


if __name__ == "__main__":
    main()
