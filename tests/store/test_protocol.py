"""The store protocol is one set of synchronous operations, and every store has all of them."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from studio.store.base import ExperimentStore, LLMCache, RunStore, Store
from studio.store.recorder import Recorder

PROTOCOLS = (RunStore, LLMCache, ExperimentStore, Store)


def _operations() -> dict[str, Callable[..., Any]]:
    return {
        name: value
        for protocol in PROTOCOLS
        for name, value in vars(protocol).items()
        if callable(value) and not name.startswith("_")
    }


def test_the_protocol_has_only_synchronous_operations() -> None:
    operations = _operations()
    assert {"create_run", "finish_step", "finish_run", "cache_put", "query_runs"} <= operations.keys()
    assert [name for name, operation in operations.items() if inspect.iscoroutinefunction(operation)] == []


def test_every_store_has_every_operation_with_its_parameters(store: Store) -> None:
    for name, operation in _operations().items():
        mine = getattr(store, name)
        assert not inspect.iscoroutinefunction(mine), name
        assert list(inspect.signature(mine).parameters) == list(inspect.signature(operation).parameters)[1:], name


def test_the_recorder_awaits_the_stores_own_writes_under_their_names() -> None:
    writes = {"finish_step", "finish_run"}
    for name in writes:
        assert inspect.iscoroutinefunction(getattr(Recorder, name))
    for name in {*writes, "create_run"}:  # a run's row is queued, not awaited (committed ahead of later writes)
        theirs = inspect.signature(getattr(RunStore, name)).parameters
        assert list(inspect.signature(getattr(Recorder, name)).parameters) == list(theirs), name
    assert not inspect.iscoroutinefunction(Recorder.create_run)
    assert list(inspect.signature(Recorder.cache_put).parameters) == list(
        inspect.signature(LLMCache.cache_put).parameters
    )
