"""`POST /runs/{id}/feedback`: a review of a run in LangSmith's feedback shape, checked and stored."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from studio.reviews.feedback import MAX_COMMENT, feedback_row, review
from studio.serve.manager import RunManager

__all__ = ["FeedbackRequest", "add_review", "feedback_row"]


class FeedbackRequest(BaseModel):
    """The body of `POST /runs/{id}/feedback`: LangSmith's key, score, value, comment and correction."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(default="verdict", max_length=200)
    """What is judged; `verdict` (the default) takes the value `good` or `bad`."""
    score: float | None = Field(default=None, ge=0, le=1)
    """0 (bad) to 1 (good)."""
    value: Any = None
    """A categorical judgement: under the key `verdict`, `good` or `bad`."""
    comment: str | None = Field(default=None, max_length=MAX_COMMENT)
    """Why, in words: the optimizer's reflective step reads it."""
    correction: dict[str, Any] | None = None
    """The outputs the run should have given, by flow output name."""
    author: str | None = Field(default=None, max_length=200)
    """Who reviews."""
    node: str | None = Field(default=None, max_length=200)
    """The node the reviewer blames."""


async def add_review(manager: RunManager, run_id: str, body: FeedbackRequest) -> dict[str, Any]:
    """Store the review (404 for no such run, 422 for a field that does not fit the run's flow)."""
    manager.get(run_id)
    verdict = body.value if body.key == "verdict" and body.value in ("good", "bad") and body.score is None else None
    record = review(
        manager.store,  # type: ignore[arg-type]
        run_id,
        verdict=verdict,
        score=body.score,
        correction=body.correction,
        comment=body.comment,
        author=body.author,
        node=body.node,
        key=body.key,
        value=None if verdict else body.value,
    )
    return feedback_row(record)
