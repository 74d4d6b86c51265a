"""An MCP tool result names its stored run in `_meta`, so the client (or a person after it) can
review that run: good, or bad with the output it should have given."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.reviews.dataset import reviewed_rows
from studio.reviews.feedback import review
from studio.reviews.queue import why_review
from studio.serve.mcp_server import RUN_ID_META
from studio.store import SQLiteStore
from tests.mcp.test_server import over_stdio

pytestmark = pytest.mark.slow  # starts `flowstudio mcp serve`


async def test_a_result_names_its_run_and_the_client_reviews_it(tmp_path: Path) -> None:
    db = tmp_path / "served.db"
    async with over_stdio(db) as client:
        good = await client.call_tool("arithmetic", {"expression": "6 * 7"})
        failed = await client.call_tool("arithmetic", {"expression": "import os"})
    assert not good.is_error and failed.is_error
    assert good.meta is not None and failed.meta is not None  # a failed call was a run too
    good_id, failed_id = good.meta[RUN_ID_META], failed.meta[RUN_ID_META]
    store = SQLiteStore(db)
    try:
        failed_run = store.get_run(failed_id)
        assert failed_run is not None and why_review(failed_run, []) == "failed"
        review(store, good_id, verdict="good", author="mcp-client")
        review(store, failed_id, verdict="bad", correction={"value": 0}, comment="not arithmetic: say 0")
        rows = reviewed_rows(store, "arithmetic")
    finally:
        store.close()
    assert [(r["expression"], r["value"], r["run_id"]) for r in rows] == [
        ("6 * 7", 42, good_id),
        ("import os", 0, failed_id),
    ]
