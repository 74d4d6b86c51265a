"""Feedback on runs: the same contract in every store (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import pytest

from studio.store import MemoryStore, RunRecord, SQLiteStore
from studio.store.feedback import FeedbackRecord

Store = MemoryStore | SQLiteStore


def test_feedback_is_kept_with_its_run_oldest_first(store: Store) -> None:
    store.create_run(RunRecord("r1", "f", None, "h", {"ticket": "x"}))
    store.create_run(RunRecord("r2", "f", None, "h", {}))
    bad = FeedbackRecord(
        "r1", score=0.0, value="bad", correction={"category": "billing"}, comment="a refund", author="ann",
        node="classify", created_at="2026-01-01T00:00:00",
    )  # fmt: skip
    good = FeedbackRecord("r1", score=1.0, value="good", author="bob", created_at="2026-01-02T00:00:00")
    store.add_feedback(good)
    store.add_feedback(bad)
    assert store.feedback("r1") == [bad, good]  # by time, every field read back as written
    assert store.feedback("r1")[0].correction == {"category": "billing"} and not bad.good and good.good
    assert store.feedback("r2") == [] and store.reviewed(["r1", "r2", "nope"]) == {"r1"}


def test_a_flows_feedback_filters_by_flow_and_version(store: Store) -> None:
    store.create_run(RunRecord("r1", "f", None, "h", {}, version="abc1"))
    store.create_run(RunRecord("r2", "f", None, "h", {}, version="def2"))
    store.create_run(RunRecord("r3", "g", None, "h", {}))
    for run_id in ("r1", "r2", "r3"):
        store.add_feedback(FeedbackRecord(run_id, score=1.0))
    assert sorted(f.run_id for f in store.feedback_of_flow("f")) == ["r1", "r2"]
    assert [f.run_id for f in store.feedback_of_flow("f", version="abc")] == ["r1"]
    assert store.feedback_of_flow("h") == []


def test_feedback_on_no_run_is_refused(store: Store) -> None:
    with pytest.raises(KeyError):
        store.add_feedback(FeedbackRecord("missing", score=1.0))
    assert store.feedback("missing") == []
