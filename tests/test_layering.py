"""Data flows one way: nodes use only the node API; the engine never imports the app."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import grimp

from tests.conftest import ROOT

ENGINE_MODULES = ["flow", "runtime", "node", "store", "models", "editor"]
"""Modules below the app: the editor model included (the Editor page drives it, never the reverse)."""


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_nodes_import_only_the_node_api() -> None:
    for path in (ROOT / "nodes").glob("*.py"):
        studio = {name for name in _imports(path) if name.startswith("studio")}
        assert studio <= {"studio.node"}, (path.name, studio)


def test_engine_never_imports_streamlit_or_the_app() -> None:
    for module in ENGINE_MODULES:
        target = ROOT / "studio" / module
        paths = list(target.rglob("*.py")) if target.is_dir() else [target.with_suffix(".py")]
        for path in paths:
            bad = {n for n in _imports(path) if n.startswith(("streamlit", "studio.app"))}
            assert not bad, (path, bad)


def test_cold_imports_stay_light() -> None:
    code = "import sys, studio.cli, studio.runtime.compiler, studio.flow.spec; print(sorted(m for m in ('litellm', 'xllamacpp', 'streamlit') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_command_imports_only_its_own_module() -> None:
    code = (
        "import sys\n"
        "from studio.cli import main\n"
        "try:\n"
        "    main(['validate', 'flows/ticket-triage.yaml'])\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        "print(sorted(m for m in sys.modules if m.startswith('studio.cli.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.splitlines()[-1] == "['studio.cli.common', 'studio.cli.flows', 'studio.cli.hardening']"


def _circles(graph: grimp.ImportGraph) -> list[set[str]]:
    """Groups of modules that import each other, directly or not (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = {stack.pop()}
            while module not in group:
                group.add(stack.pop())
            if len(group) > 1:
                found.append(group)

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_import_circle_at_all() -> None:
    graph = grimp.build_graph("studio", "nodes")
    circles = _circles(graph)
    assert circles == []


def test_the_import_contract_holds() -> None:
    out = subprocess.run([str(Path(sys.executable).parent / "lint-imports")], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-3000:]


def test_each_built_in_node_type_reads_in_one_screen() -> None:
    """A node type's file shows its contract and its `run`; shared machinery lives in helpers."""
    from studio.runtime import registry

    types = [registry.get(key) for key in registry.keys()]  # noqa: SIM118 (a module function, not a dict)
    files = {Path(inspect.getfile(t)) for t in types if t is not None} & set((ROOT / "nodes").glob("*.py"))
    assert len(files) > 15
    long = {f.name: n for f in files if (n := len(f.read_text(encoding="utf-8").splitlines())) >= 150}
    assert long == {}


def test_the_architecture_page_states_the_contract_and_names_every_folder() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    start = pyproject.index("[[tool.importlinter.contracts]]")
    contracts = pyproject[
        start : pyproject.index("allow_indirect_imports = true") + len("allow_indirect_imports = true")
    ]
    assert contracts in page
    packages = sorted(p.parent.name for p in (ROOT / "studio").glob("*/__init__.py"))
    assert [p for p in packages if f"`studio/{p}/`" not in page] == []
    layers = contracts[contracts.index("layers = [") : contracts.index("]", contracts.index("layers = ["))]
    layered = [name for line in layers.splitlines() for name in line.split('"')[1::2]]
    in_layers = {part.strip() for name in layered for part in name.replace(":", "|").split("|")}
    assert {f"studio.{p}" for p in packages} <= in_layers


def test_built_in_type_names_appear_only_in_nodes() -> None:
    """Code outside `nodes/` asks the registry (by role, by what a node declares), never names a
    built-in type in a string: a third-party node can then take part everywhere a built-in does."""
    from studio.runtime import registry

    keys = registry.keys()
    built_in = [key for key in keys if getattr(registry.get(key), "__module__", "").startswith("nodes.")]
    assert "llm.generate" in built_in
    named = []
    for path in (ROOT / "studio").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in built_in:
                named.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
    assert not named, named
