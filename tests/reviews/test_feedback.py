"""A review is checked against the run's flow and stored; the queue's rules; datasets from reviews."""

from __future__ import annotations

import pytest

from studio.errors import InputError
from studio.reviews.dataset import reviewed_rows
from studio.reviews.feedback import review
from studio.reviews.queue import why_review
from studio.store import MemoryStore, RunRecord, StepRecord
from tests.conftest import FLOWS

TRIAGE = (FLOWS / "ticket-triage.yaml").read_text()


def _run(store: MemoryStore, run_id: str, ticket: str, category: str = "billing", **extra: object) -> None:
    outputs = {"category": category, "reply": "Sorry."}
    record = RunRecord(run_id, "ticket-triage", None, "h", {"ticket": ticket}, **extra)  # type: ignore[arg-type]
    store.create_run(record, TRIAGE)
    store.finish_run(run_id, status="succeeded", outputs=outputs, error=None)


def test_a_review_is_stored_with_its_run() -> None:
    store = MemoryStore()
    _run(store, "r1", "refund me")
    record = review(store, "r1", verdict="bad", correction={"category": "bug"}, comment="crash", node="classify")
    assert (record.score, record.value, record.good) == (0.0, "bad", False)
    assert store.feedback("r1") == [record] and store.feedback("r1")[0].correction == {"category": "bug"}


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"correction": {"label": "x"}}, "correction.label"),
        ({"verdict": "good", "node": "nope"}, "node"),
        ({"score": 1.5}, "score"),
        ({"verdict": "good", "score": 1.0}, "score"),
        ({}, "verdict"),
    ],
)
def test_a_review_that_does_not_fit_the_flow_is_refused(given: dict[str, object], field: str) -> None:
    store = MemoryStore()
    _run(store, "r1", "refund me")
    with pytest.raises(InputError) as caught:
        review(store, "r1", **given)  # type: ignore[arg-type]
    assert caught.value.field == field and store.feedback("r1") == []


def test_rows_from_reviews_merge_inputs_newest_review_first() -> None:
    store = MemoryStore()
    _run(store, "r1", "refund me", category="bug")
    _run(store, "r2", "refund me", category="billing")
    _run(store, "r3", "app crashes", category="bug")
    _run(store, "r4", "hello", category="bug")
    review(store, "r1", verdict="bad", correction={"category": "billing"}, comment="money")
    review(store, "r3", verdict="good")
    review(store, "r4", verdict="bad")  # no correction: nothing to learn as a row
    review(store, "r2", verdict="good")  # same inputs as r1, newer: wins
    rows = reviewed_rows(store, "ticket-triage")
    assert [(r["ticket"], r["category"], r["run_id"]) for r in rows] == [
        ("app crashes", "bug", "r3"),
        ("refund me", "billing", "r2"),
    ]
    review(store, "r1", verdict="bad", correction={"category": "other"}, comment="spam", node="classify")
    corrected = {r["ticket"]: r for r in reviewed_rows(store, "ticket-triage")}["refund me"]
    assert (corrected["category"], corrected["reply"], corrected["review_comment"], corrected["review_node"]) == (
        "other", "Sorry.", "spam", "classify",
    )  # fmt: skip


def test_the_queue_takes_failed_unsure_and_a_share_of_the_rest() -> None:
    ok = RunRecord("a" * 16, "f", None, "h", {}, status="succeeded")
    unsure = StepRecord(node="classify", status="succeeded", outputs={"label": "bug", "confidence": 0.4})
    sure = StepRecord(node="classify", status="succeeded", outputs={"label": "bug", "confidence": 0.9})
    assert why_review(RunRecord("b", "f", None, "h", {}, status="failed"), []) == "failed"
    assert why_review(ok, [unsure]) == "low confidence at classify (0.40)"
    assert why_review(ok, [sure], share=0) is None and why_review(ok, [sure], share=1) == "random sample"
