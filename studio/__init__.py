"""Flowstudio: build, run, trace and optimize LLM workflows written as YAML flows.

Names are imported on first use, so `flowstudio --help` and `validate` start fast.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CompileError": "studio.errors",
    "Engine": "studio.runtime.engine",
    "Flow": "studio.flow.spec",
    "FlowError": "studio.errors",
    "FlowSpec": "studio.flow.spec",
    "InputError": "studio.errors",
    "LoadError": "studio.errors",
    "MemoryStore": "studio.store",
    "NodeError": "studio.errors",
    "Plan": "studio.runtime.compiler",
    "RunResult": "studio.runtime.engine",
    "SQLiteStore": "studio.store",
    "SpecError": "studio.errors",
    "TemplateError": "studio.errors",
    "compile_flow": "studio.runtime.compiler",
    "load_flow": "studio.flow.spec",
    "load_flow_text": "studio.flow.spec",
    "run_flow": "studio.runtime.runner",
    "run_flow_async": "studio.runtime.runner",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'studio' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
