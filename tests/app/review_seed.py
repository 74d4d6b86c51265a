"""A store for the review queue's tests: runs of the scripted chain flow and one failed run."""

from __future__ import annotations

from pathlib import Path

from studio.runtime.runner import run_flow
from tests.app.seed import FLOWS

TOPICS = ["sun", "rain", "snow", "wind", "fog"]
"""One chain run each, oldest first (the queue shows the newest first)."""


def seed_reviews(db: Path) -> dict[str, str]:
    """Five chain runs (topic → run id) and a failed run of `failing` (under `failed`)."""
    runs = {topic: run_flow(FLOWS / "chain.yaml", {"topic": topic}, db=db).run_id for topic in TOPICS}
    runs["failed"] = run_flow(FLOWS / "failing.yaml", {"topic": "tea"}, db=db).run_id
    return runs
