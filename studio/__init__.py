"""Flowstudio: build, run, trace and optimize LLM workflows written as YAML flows.

`__all__` is the public Python API (checked by tests/test_exported_members.py). Names are
imported on first use, so `flowstudio --help` and `validate` start fast.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CompileError": "studio.errors",
    "Engine": "studio.runtime.engine",
    "Flow": "studio.flow.spec",
    "FlowChanged": "studio.runtime.runner",
    "FlowError": "studio.errors",
    "FlowSpec": "studio.flow.spec",
    "FlowWarning": "studio.errors",
    "Hook": "studio.runtime.hooks",
    "InputError": "studio.errors",
    "LoadError": "studio.errors",
    "MemoryStore": "studio.store",
    "NodeError": "studio.errors",
    "OutputError": "studio.errors",
    "Plan": "studio.runtime.compiler",
    "RunOptions": "studio.runtime.engine",
    "RunResult": "studio.runtime.engine",
    "SQLiteStore": "studio.store",
    "SpecError": "studio.errors",
    "Store": "studio.store.base",
    "TemplateError": "studio.errors",
    "compile_flow": "studio.runtime.compiler",
    "load_flow": "studio.flow.spec",
    "load_flow_text": "studio.flow.spec",
    "run_flow": "studio.runtime.runner",
    "rerun_async": "studio.runtime.runner",
    "rerun_on": "studio.runtime.runner",
    "resume_on": "studio.runtime.runner",
    "resume_run_async": "studio.runtime.runner",
    "run_flow_async": "studio.runtime.runner",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'studio' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
