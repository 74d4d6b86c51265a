"""Reading what a source file names, safely: YAML through the safe loader, text files confined to
the source folder and capped in size, Python only parsed (never imported or run)."""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.errors import FlowError
from studio.flow.loader import Document, load_file

MAX_FILE_BYTES = 256 * 1024
"""Largest prompt or Python file read from a source folder."""


def load_yaml(path: Path) -> Document:
    """The source YAML file, loaded safely (one clear FlowError when it is broken or missing)."""
    if not path.is_file():
        raise FlowError("no such file", file=str(path))
    return load_file(path)


def read_text(folder: Path, name: str) -> str:
    """A file named by the source, which must stay inside `folder` (raises ValueError saying why)."""
    root = folder.resolve()
    path = (root / name).resolve()
    if not path.is_relative_to(root):
        raise ValueError(f"{name} is outside the flow folder")
    if not path.is_file():
        raise ValueError(f"{name} does not exist")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ValueError(f"{name} is larger than {MAX_FILE_BYTES // 1024} KiB")
    return path.read_text(encoding="utf-8")


@dataclass
class Function:
    """A tool function found in Python source, and the source without its tool decorator."""

    name: str
    """The function's name."""
    params: dict[str, Any]
    """Parameter name → its default (a literal), or `REQUIRED`."""
    annotations: dict[str, str]
    """Parameter name → its annotation as written."""
    code: str
    """The module's source with the `@tool` decorator and the promptflow imports taken out."""
    foreign: list[str]
    """Imported modules outside the standard library (besides promptflow)."""
    network: list[str]
    """Imported modules that reach the network (code.python has none)."""


NETWORK = {"urllib", "http", "socket", "ssl", "requests", "httpx", "aiohttp", "urllib3"}
"""Top-level modules whose use means network access."""
REQUIRED = object()
"""Marks a parameter with no default."""


def tool_function(source: str, decorator: str = "tool", entry: str | None = None) -> Function:
    """The function decorated `@tool` (else the one named `entry`, else the module's only function),
    parsed with `ast`; raises ValueError when there is none or the source does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        raise ValueError(f"the Python file does not parse ({type(err).__name__})") from None
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    tools = [f for f in functions if any(_names(d, decorator) for d in f.decorator_list)]
    named = [f for f in functions if entry and f.name == entry]
    chosen = tools or named or (functions if len(functions) == 1 else [])
    if len(chosen) != 1:
        wanted = f"`{entry}` function" if entry else "@tool function"
        raise ValueError(f"no single {wanted} in the Python file")
    func = chosen[0]
    drop: set[int] = set()
    for d in func.decorator_list:
        if _names(d, decorator):
            drop |= set(range(d.lineno, (d.end_lineno or d.lineno) + 1))
    foreign = []
    for node in tree.body:
        modules = _imported(node)
        if any(m.split(".")[0] == "promptflow" for m in modules):
            drop |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        foreign += [m for m in modules if m.split(".")[0] not in sys.stdlib_module_names | {"promptflow"}]
    code = "\n".join(line for i, line in enumerate(source.splitlines(), 1) if i not in drop)
    code = re.sub(r"\n{4,}", "\n\n\n", code).strip("\n") + "\n"
    network = sorted({m for node in tree.body for m in _imported(node) if m.split(".")[0] in NETWORK})
    return Function(func.name, _params(func.args), _annotations(func.args), code, foreign, network)


def sandbox_notes(func: Function) -> list[str]:
    """What will not work in code.python's sandbox: third-party modules, the network."""
    notes = []
    if func.foreign:
        notes.append(
            f"imports {', '.join(sorted(set(func.foreign)))}: code.python's sandbox has the standard library only"
        )
    if func.network:
        notes.append(f"uses {', '.join(func.network)}: code.python has no network; a tool.http node fetches URLs")
    return notes


def _names(node: ast.expr, name: str) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return (isinstance(target, ast.Name) and target.id == name) or (
        isinstance(target, ast.Attribute) and target.attr == name
    )


def _imported(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and not node.level:
        return [node.module]
    return []


def _params(args: ast.arguments) -> dict[str, Any]:
    positional = [*args.posonlyargs, *args.args]
    defaults: list[Any] = [REQUIRED] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = [*zip(positional, defaults, strict=True), *zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    return {a.arg: REQUIRED if d is None or d is REQUIRED else _literal(d) for a, d in pairs}


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None


def _annotations(args: ast.arguments) -> dict[str, str]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    return {a.arg: ast.unparse(a.annotation) for a in every if a.annotation is not None}
