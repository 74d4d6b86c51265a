"""The layers picture of docs/architecture.md, drawn from the real import graph.

Run:  .venv/bin/python bench/import_graph.py [--out docs/img/layers.svg]
Reads the import-linter layers contract from pyproject.toml, builds the import graph of
`studio` and `nodes` with grimp (the library import-linter uses), folds it into one box per
package of the contract, and draws each layer as a row (graphviz `dot`), every package-level
import as an arrow labelled with the number of module imports behind it. Rerun it after a
change of structure; an arrow that points up a row is a broken contract.
"""

from __future__ import annotations

import argparse
import tomllib
from collections import Counter
from pathlib import Path

import graphviz
import grimp

ROOT = Path(__file__).resolve().parent.parent


def layers() -> list[list[str]]:
    """The contract's layers, top first, each a list of packages (optional ones that exist only)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    rows = []
    for layer in contract["layers"]:
        names = [n.strip().strip("()") for n in layer.replace(":", "|").split("|")]
        rows.append(
            [n for n in names if (ROOT / n.replace(".", "/")).exists() or (ROOT / f"{n.replace('.', '/')}.py").exists()]
        )
    for row in rows:  # the built-in nodes sit beside the runtime that loads them (by entry point)
        if "studio.runtime" in row:
            row.append("nodes")
    return rows


def package_of(module: str, packages: list[str]) -> str | None:
    """The contract package a module belongs to (the longest that contains it)."""
    found = [p for p in packages if module == p or module.startswith(p + ".")]
    return max(found, key=len) if found else None


def edges(packages: list[str]) -> Counter[tuple[str, str]]:
    """Module imports between packages, counted per (importer, imported) package pair."""
    graph = grimp.build_graph("studio", "nodes")
    counted: Counter[tuple[str, str]] = Counter()
    for module in graph.modules:
        source = package_of(module, packages)
        for imported in graph.find_modules_directly_imported_by(module):
            target = package_of(imported, packages)
            if source and target and source != target:
                counted[(source, target)] += 1
    return counted


def draw(rows: list[list[str]], counted: Counter[tuple[str, str]]) -> graphviz.Digraph:
    """One row per layer (top first), one arrow per imported package."""
    dot = graphviz.Digraph("layers", graph_attr={"rankdir": "TB", "nodesep": "0.3", "ranksep": "0.5"})
    dot.attr("node", shape="box", style="rounded,filled", fillcolor="#eef3fb", fontname="Helvetica", fontsize="11")
    dot.attr("edge", color="#7a8699", fontname="Helvetica", fontsize="9", arrowsize="0.6")
    for number, row in enumerate(rows):
        with dot.subgraph(name=f"layer{number}") as layer:
            layer.attr(rank="same")
            for package in row:
                layer.node(package, package.removeprefix("studio.") if package != "nodes" else "nodes (built-in)")
    for (source, target), count in sorted(counted.items()):
        dot.edge(source, target, label=str(count))
    return dot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "img" / "layers.svg"), help="The SVG to write.")
    args = parser.parse_args()
    rows = layers()
    packages = [p for row in rows for p in row]
    svg = draw(rows, edges(packages)).pipe(format="svg")
    Path(args.out).write_bytes(svg)
    print(f"{args.out}: {len(packages)} packages in {len(rows)} layers")


if __name__ == "__main__":
    main()
