"""The review queue over a store: filters and rules, reviewed runs leave it; counts; edited outputs."""

from __future__ import annotations

import pytest

from studio.errors import InputError
from studio.reviews.counts import ReviewCounts, review_counts
from studio.reviews.edits import as_text, correction
from studio.reviews.feedback import review
from studio.reviews.queue import ANY_RULE, EVERY_RUN, review_queue
from studio.store import MemoryStore, RunRecord, StepRecord
from studio.store.base import RunFilter
from tests.conftest import FLOWS

TRIAGE = (FLOWS / "ticket-triage.yaml").read_text()


def _run(
    store: MemoryStore, run_id: str, *, status: str = "succeeded", confidence: float = 0.9, **extra: object
) -> None:
    record = RunRecord(run_id, "ticket-triage", None, "h", {"ticket": run_id}, started_at=f"2026-01-01T00:00:0{len(store._runs)}", **extra)  # type: ignore[arg-type]  # fmt: skip
    store.create_run(record, TRIAGE)
    step = StepRecord(node="classify", status="succeeded", outputs={"label": "bug", "confidence": confidence})
    store.finish_step(run_id, step, [])
    outputs = {"category": "bug", "reply": "Sorry."} if status == "succeeded" else None
    store.finish_run(run_id, status=status, outputs=outputs, error=None if outputs else "boom")  # type: ignore[arg-type]


@pytest.fixture
def store() -> MemoryStore:
    store = MemoryStore()
    _run(store, "ok1")
    _run(store, "ok2")
    _run(store, "unsure", confidence=0.3)
    _run(store, "broken", status="failed")
    _run(store, "batch", status="failed", experiment_id="exp")
    return store


def _ids(store: MemoryStore, rule: str, **where: str) -> list[str]:
    return [item.run.run_id for item in review_queue(store, RunFilter(**where), rule=rule, share=0)]


def test_the_queue_keeps_what_its_rule_asks_for_newest_first_and_no_experiment_runs(store: MemoryStore) -> None:
    assert _ids(store, ANY_RULE) == ["broken", "unsure"]
    assert _ids(store, "failed") == ["broken"] and _ids(store, "low confidence") == ["unsure"]
    assert _ids(store, EVERY_RUN) == ["broken", "unsure", "ok2", "ok1"]
    assert _ids(store, EVERY_RUN, status="succeeded") == ["unsure", "ok2", "ok1"]
    assert _ids(store, EVERY_RUN, flow="other") == []
    reasons = {i.run.run_id: i.reason for i in review_queue(store, RunFilter(), rule=EVERY_RUN, share=0)}
    assert reasons == {"broken": "failed", "unsure": "low confidence at classify (0.30)", "ok2": "unreviewed", "ok1": "unreviewed"}  # fmt: skip
    with pytest.raises(ValueError, match="no queue rule"):
        review_queue(store, RunFilter(), rule="nope")


def test_reviewed_runs_leave_the_queue_and_are_counted(store: MemoryStore) -> None:
    review(store, "broken", verdict="bad", correction={"category": "billing"}, comment="money")
    review(store, "ok1", verdict="good")
    review(store, "ok2", verdict="bad")
    review(store, "ok2", verdict="good")  # the newest review counts
    assert _ids(store, EVERY_RUN) == ["unsure"]
    assert review_counts(store, "ticket-triage") == ReviewCounts(reviewed=3, good=2, bad=1, corrected=1)
    assert review_counts(store, "other") == ReviewCounts()


def test_edited_outputs_become_a_correction_of_the_original_kind() -> None:
    outputs = {"category": "bug", "scores": [1, 2], "n": 3}
    edited = {name: as_text(value) for name, value in outputs.items()}
    assert correction(outputs, edited) == {}
    assert correction(outputs, {**edited, "category": "billing", "scores": "[3]"}) == {"category": "billing", "scores": [3]}  # fmt: skip
    assert correction({}, {"category": "42", "tags": '["a"]', "empty": ""}) == {"category": "42", "tags": ["a"]}
    with pytest.raises(InputError) as caught:
        correction(outputs, {**edited, "n": "three"})
    assert caught.value.field == "correction.n"
