"""One review of one run, checked against the flow the run ran, then stored with it.

The record is LangSmith's feedback shape (`studio.store.feedback.FeedbackRecord`); a reviewer's
`good`/`bad` verdict is the score 1/0 under the key `verdict`.
"""

from __future__ import annotations

from typing import Any, Literal

from studio.errors import InputError
from studio.flow.loader import loads
from studio.store.base import RunRecord
from studio.store.feedback import FeedbackRecord, FeedbackStore

Verdict = Literal["good", "bad"]
MAX_COMMENT = 10_000
"""The longest comment kept (characters)."""


def flow_parts(store: FeedbackStore, run: RunRecord) -> tuple[list[str], list[str]]:
    """The output names and node ids of the flow text a run ran (empty when it was not stored)."""
    text = store.flow_text(run.run_id)
    data = loads(text, run.flow_path or run.flow).data if text else None
    if not isinstance(data, dict):
        return [], []
    return list(data.get("outputs") or {}), list(data.get("nodes") or {})


def review(
    store: FeedbackStore,
    run_id: str,
    *,
    verdict: Verdict | None = None,
    score: float | None = None,
    correction: dict[str, Any] | None = None,
    comment: str | None = None,
    author: str | None = None,
    node: str | None = None,
    key: str = "verdict",
    value: Any = None,
) -> FeedbackRecord:
    """Check a review of `run_id` against its flow and store it; InputError names the field at fault."""
    run = store.get_run(run_id)
    if run is None:
        raise InputError(f"no run {run_id!r}", field="RUN_ID")
    if run.status == "running":
        raise InputError(f"run {run_id} is still running: review it once it ends", field="RUN_ID")
    if verdict is not None and score is not None:
        raise InputError("give a verdict or a score, not both", field="score")
    if score is not None and not 0 <= score <= 1:
        raise InputError(f"score {score} is outside 0-1", field="score")
    if verdict is None and score is None and not correction and not comment:
        raise InputError("a review needs a verdict, a score, a correction or a comment", field="verdict")
    if comment is not None and len(comment) > MAX_COMMENT:
        raise InputError(f"the comment is longer than {MAX_COMMENT} characters", field="comment")
    _check_names(store, run, correction or {}, node)
    if verdict is not None:
        score, value = (1.0 if verdict == "good" else 0.0), verdict
    record = FeedbackRecord(run.run_id, key, score, value, correction or None, comment, author, node)
    return store.add_feedback(record)


def _check_names(store: FeedbackStore, run: RunRecord, correction: dict[str, Any], node: str | None) -> None:
    outputs, nodes = flow_parts(store, run)
    for name in correction:
        if name not in outputs:
            raise InputError(
                f"flow {run.flow!r} has no output {name!r}; its outputs are {outputs}", field=f"correction.{name}"
            )
    if node is not None and node.split(".")[0].split("[")[0] not in nodes:
        raise InputError(f"flow {run.flow!r} has no node {node!r}; its nodes are {nodes}", field="node")


def feedback_row(record: FeedbackRecord) -> dict[str, Any]:
    """The record as JSON (the API's and `--json`'s shape)."""
    return {
        "id": record.feedback_id, "run_id": record.run_id, "key": record.key, "score": record.score,
        "value": record.value, "correction": record.correction, "comment": record.comment,
        "author": record.author, "node": record.node, "created_at": record.created_at,
    }  # fmt: skip
