"""The LLM cache conformance suite (`LLMCache`): every store implementation passes it (memory and SQLite)."""

from __future__ import annotations

from studio.store import MemoryStore, SQLiteStore
from studio.store.base import LLMCache, RunStore

Store = MemoryStore | SQLiteStore


def test_a_put_reply_is_got_back_by_its_key(store: Store) -> None:
    cache: LLMCache = store
    assert cache.cache_get("k1") is None
    reply = {"text": "yo", "input_tokens": 1, "top_logprobs": [{" a": -0.1}]}
    cache.cache_put("k1", "scripted", reply)
    assert cache.cache_get("k1") == reply
    assert cache.cache_get("k2") is None


def test_a_later_put_replaces_and_records_are_copies(store: Store) -> None:
    store.cache_put("k", "scripted", {"text": "one"})
    store.cache_put("k", "scripted", {"text": "two"})
    got = store.cache_get("k")
    assert got == {"text": "two"}
    got["text"] = "changed"
    assert store.cache_get("k") == {"text": "two"}


def test_the_cache_is_apart_from_runs(store: Store) -> None:
    runs: RunStore = store
    store.cache_put("k", "scripted", {"text": "one"})
    assert runs.query_runs() == [] and runs.count_runs() == 0
