"""`studio.__all__` is the public Python API: every name imports, and nothing public is missing."""

from __future__ import annotations

import inspect
import typing
from types import ModuleType

import studio
import studio.errors
import studio.runtime.runner


def _defined_in(module: ModuleType) -> set[str]:
    """Public functions and classes a module defines (not the ones it imports)."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == module.__name__
    }


def test_every_exported_name_imports() -> None:
    assert studio.__all__ == sorted(studio.__all__)
    for name in studio.__all__:
        value = getattr(studio, name)
        assert getattr(value, "__name__", name) == name, name
        assert name in dir(studio)


def test_unknown_names_are_attribute_errors() -> None:
    assert not hasattr(studio, "nothing_here")


def test_every_error_and_runner_function_is_exported() -> None:
    public = _defined_in(studio.errors) | _defined_in(studio.runtime.runner)
    assert public - set(studio.__all__) == set()


def test_types_in_exported_signatures_are_exported() -> None:
    """A class an exported function takes or returns is exported too (run_flow's RunOptions, RunResult)."""
    missing = set()
    functions = [getattr(studio, name) for name in studio.__all__ if inspect.isfunction(getattr(studio, name))]
    assert len(functions) >= 6
    for value in functions:
        name = value.__name__
        hints = typing.get_type_hints(value, vars(inspect.getmodule(value)))
        for hint in hints.values():
            for cls in [hint, *typing.get_args(hint)]:
                module = getattr(cls, "__module__", "")
                if inspect.isclass(cls) and module.startswith("studio.") and cls.__name__ not in studio.__all__:
                    missing.add(f"{name}: {module}.{cls.__name__}")
    assert missing == set()
