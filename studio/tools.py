"""Python tools: plain functions that `tool.python` and `llm.agent` call by name.

Two sources: the flow's `tools:` section (name → `module:function`, the module a file in the
flow's directory or allowlisted) and the `flowstudio.tools` entry-point group, which
installed packages use exactly like `flowstudio.nodes`. The section wins on a name clash.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from studio.errors import CompileError
from studio.plugins import plugins

if TYPE_CHECKING:
    from studio.flow.spec import Flow

GROUP = "flowstudio.tools"
ALLOW_ENV = "FLOWSTUDIO_TOOL_MODULES"
"""Comma-separated modules (and their submodules) a flow's `tools:` may name besides its own files."""


def registered_names() -> list[str]:
    """Names of the tools installed through entry points, sorted."""
    return sorted(plugins(GROUP))


@cache
def registered_tool(name: str) -> Callable[..., Any] | None:
    """The entry-point tool `name` (imported on first use), or None."""
    entry = plugins(GROUP).get(name)
    if entry is None:
        return None
    tool = entry.load()
    if not callable(tool):
        raise TypeError(f"entry point {name!r} in {GROUP} does not name a function")
    return tool  # type: ignore[no-any-return]


def resolve_tools(flow: Flow, allow: Iterable[str] = ()) -> dict[str, Callable[..., Any]]:
    """Import the functions named in the flow's `tools:` section; raises CompileError.

    Runs module code, so the engine calls it when a run starts, never on validate.
    """
    allowed = [*allow, *filter(None, os.environ.get(ALLOW_ENV, "").split(","))]
    tools: dict[str, Callable[..., Any]] = {}
    for name, target in flow.spec.tools.items():
        try:
            tools[name] = _load(target, flow.base_dir, allowed)
        except Exception as err:
            message = f"tool {name!r} ({target}): {err}"
            raise CompileError(
                message, file=flow.file, line=flow.line_of("tools", name), field=f"tools.{name}"
            ) from None
    return tools


def _load(target: str, base_dir: Path, allowed: list[str]) -> Callable[..., Any]:
    module_name, _, function = target.partition(":")
    local = _local_file(module_name, base_dir)
    if local is not None:
        module = _import_file(module_name, local, base_dir)
    elif any(module_name == a or module_name.startswith(a + ".") for a in allowed):
        module = importlib.import_module(module_name)
    else:
        raise ValueError(f"module {module_name!r} is not a file in {base_dir} and not allowlisted in ${ALLOW_ENV}")
    tool = getattr(module, function, None)
    if not callable(tool):
        raise ValueError(f"module {module_name!r} has no function {function!r}")
    return tool  # type: ignore[no-any-return]


def _local_file(module_name: str, base_dir: Path) -> Path | None:
    stem = base_dir.joinpath(*module_name.split("."))
    for candidate in (stem.with_suffix(".py"), stem / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _import_file(module_name: str, path: Path, base_dir: Path) -> ModuleType:
    """Import a flow's own module under a private name, so it never shadows an installed one."""
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    private = f"_flowstudio_tools_{digest}_{module_name.replace('.', '_')}"
    if private in sys.modules:
        return sys.modules[private]
    spec = importlib.util.spec_from_file_location(private, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(base_dir))  # its own sibling imports resolve from the flow's directory
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(base_dir))
    sys.modules[private] = module
    return module
