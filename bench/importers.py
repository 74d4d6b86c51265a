"""Importers: the share of flows that import and validate, and of nodes converted natively.

Without options it imports every Prompt flow folder under tests/importers/fixtures/promptflow/ and
every Dify app under tests/importers/fixtures/dify/ (fixtures written in the shape of each tool's
public examples). With `--source DIR` it imports every Prompt flow folder (a `flow.dag.yaml`) and
every Dify DSL app (a .yml/.yaml file with `app:` and a `graph:`) found recursively under DIR: the real
public examples, which are not shipped with the repository (see docs/benchmarks.md for where to
get them). Each flow is imported without placeholders (counted when it imports and its flow file
validates as `flowstudio validate` does) and with them (the node outcomes, and why nodes or flows
failed).

Usage: .venv/bin/python -m bench.importers [--source DIR] [--json] [--top N]
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from studio.errors import FlowError
from studio.importers import Imported, import_dify, import_promptflow, write_import

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "importers" / "fixtures"
Importer = Callable[..., Imported]


def fixture_items(source: str) -> list[Path]:
    """The fixture flows of `source` (promptflow: folders, dify: .yml files)."""
    if source == "promptflow":
        return sorted(p for p in (FIXTURES / "promptflow").iterdir() if p.is_dir())
    return sorted((FIXTURES / "dify").glob("*.yml"))


def found_items(root: Path) -> dict[str, list[Path]]:
    """Prompt flow folders and Dify apps found recursively under `root`."""
    flows = sorted(p.parent for p in root.rglob("flow.dag.yaml") if p.is_file())
    apps = sorted(p for p in root.rglob("*") if p.suffix in (".yml", ".yaml") and _is_dify(p))
    return {"promptflow": flows, "dify": apps}


def _is_dify(path: Path) -> bool:
    if not path.is_file() or path.name == "flow.dag.yaml":
        return False
    try:
        text = path.read_text(encoding="utf-8", errors="replace")[: 4 * 1024 * 1024]
    except OSError:
        return False
    return bool(re.search(r"^app:", text, re.M)) and bool(re.search(r"^ +graph:", text, re.M))


def _reason(text: str) -> str:
    """A failure message with the instance-specific parts (paths, names, numbers) blurred."""
    text = text.splitlines()[0] if text else ""
    text = re.sub(r"(?:(?<=\s)|^)(?:/[^\s:()]+)+(:\d+)*:? ?", "", text)  # absolute paths only
    text = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "…", text)
    return re.sub(r"\d+", "N", text)[:140]


def _failure(importer: Importer, item: Path, out: Path) -> str | None:
    """Why `item` does not import (without placeholders) and validate; None when it does."""
    try:
        imported = importer(item)
        refusal = next((n for n in imported.report.nodes if n.status == "not converted"), None)
        if refusal:
            return f"{refusal.kind} node not converted: {refusal.notes[-1]}"
        write_import(imported, out)
    except FlowError as err:
        return str(err)
    return None


def measure(source: str, items: list[Path], top: int = 8) -> dict[str, object]:
    """Import each of `items` with the importer of `source`: flows and nodes, by outcome."""
    importer: Importer = import_promptflow if source == "promptflow" else import_dify
    valid, refused = 0, 0
    nodes: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as scratch:
        for i, item in enumerate(items):
            failure = _failure(importer, item, Path(scratch) / f"flow{i}" / "flow.yaml")
            if failure:
                reasons[_reason(failure)] += 1
            else:
                valid += 1
            try:
                loose = importer(item, allow_placeholders=True)
            except FlowError:
                refused += 1
                continue
            for node in loose.report.nodes:
                nodes[node.status] += 1
                if node.status == "not converted":
                    kinds[node.kind] += 1
    total = sum(nodes.values()) or 1
    return {
        "source": source,
        "flows": len(items),
        "import_and_validate": valid,
        "share_valid": round(valid / (len(items) or 1), 3),
        "refused_even_with_placeholders": refused,
        "nodes": sum(nodes.values()),
        "native": nodes["converted"],
        "approximated": nodes["approximated"],
        "not_converted": nodes["not converted"],
        "share_native": round(nodes["converted"] / total, 3),
        "share_converted": round((nodes["converted"] + nodes["approximated"]) / total, 3),
        "failure_reasons": reasons.most_common(top),
        "not_converted_kinds": kinds.most_common(top),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, help="a folder of Prompt flow flows and/or Dify apps (recursive)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--top", type=int, default=8, help="how many failure reasons to list")
    args = parser.parse_args()
    if args.source:
        found = found_items(args.source)
        results = [measure(s, items, args.top) for s, items in found.items() if items]
    else:
        results = [measure(s, fixture_items(s), args.top) for s in ("promptflow", "dify")]
    if args.json:
        print(json.dumps(results, indent=2, ensure_ascii=False))
        return
    for r in results:
        print(
            f"{r['source']:<11} {r['import_and_validate']}/{r['flows']} flows import and validate ({r['share_valid']:.0%}); "
            f"{r['refused_even_with_placeholders']} refused even with placeholders; "
            f"nodes {r['native']}/{r['nodes']} native ({r['share_native']:.0%}), {r['approximated']} approximated, "
            f"{r['not_converted']} not converted"
        )
        for reason, n in r["failure_reasons"]:  # type: ignore[attr-defined]
            print(f"  {n:>3}  {reason}")
        if r["not_converted_kinds"]:
            print("  not converted by kind: " + ", ".join(f"{k} {n}" for k, n in r["not_converted_kinds"]))  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
