"""Datasets from reviews: a flow's reviewed runs as batch rows (inputs, expected outputs, run id).

A run counts by its newest review: a correction gives the expected outputs (the run's own outputs
for those the reviewer left alone), a good verdict confirms the run's outputs, a bad one without a
correction gives no row. Runs with the same inputs make one row: the newest review wins.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from studio.store.feedback import FeedbackRecord, FeedbackStore

RUN_COLUMN = "run_id"
"""The column naming the run a row came from."""
COMMENT_COLUMN = "review_comment"
"""The column holding the reviewer's comment, which the optimizer's reflective step reads."""
NODE_COLUMN = "review_node"
"""The column naming the node the reviewer blamed (empty when none), which the optimizer's moves aim at first."""


def reviewed_rows(store: FeedbackStore, flow: str, version: str | None = None) -> list[dict[str, Any]]:
    """One row per distinct input of the flow's reviewed runs, in review order."""
    newest: dict[str, FeedbackRecord] = {}
    for record in store.feedback_of_flow(flow, version):
        newest[record.run_id] = record  # oldest first: the last one stays
    rows: dict[str, dict[str, Any]] = {}
    for record in sorted(newest.values(), key=lambda r: r.created_at):
        row = _row(store, record)
        if row is not None:
            key = json.dumps({k: v for k, v in row.items() if k in row["__inputs"]}, sort_keys=True, default=str)
            rows.pop(key, None)
            rows[key] = row
    return [{k: v for k, v in row.items() if k != "__inputs"} for row in rows.values()]


def _row(store: FeedbackStore, record: FeedbackRecord) -> dict[str, Any] | None:
    run = store.get_run(record.run_id)
    if run is None or (not record.correction and record.good is not True):
        return None
    outputs = {**(run.outputs or {}), **(record.correction or {})}
    return {
        **run.inputs, **outputs, RUN_COLUMN: run.run_id, COMMENT_COLUMN: record.comment or "", NODE_COLUMN: record.node or "",
        "__inputs": list(run.inputs),
    }  # fmt: skip


def reviewed(rows: Iterable[Mapping[str, Any]]) -> int:
    """How many of a dataset's rows came from reviewed runs (they carry the run id column)."""
    return sum(1 for row in rows if row.get(RUN_COLUMN))


def reviewer_blamed(rows: Iterable[Mapping[str, Any]], nodes: Iterable[str]) -> dict[str, int]:
    """How many rows' reviewers blamed each of `nodes` (a step path counts for its top node)."""
    wanted = set(nodes)
    counts: dict[str, int] = {}
    for row in rows:
        blamed = str(row.get(NODE_COLUMN) or "").split(".")[0].split("[")[0]
        if blamed in wanted:
            counts[blamed] = counts.get(blamed, 0) + 1
    return counts


def write_jsonl(rows: list[dict[str, Any]], path: str | Path) -> int:
    """Write the rows as JSON Lines; returns how many."""
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")
    return len(rows)
