"""retrieve.fts over a document table: in memory from a directory, or a file built by `flowstudio index`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodes.retrieve_fts import fts_query
from tests.conftest import CLI, FLOWS
from tests.nodes.runner import run_flow

HANDBOOK = FLOWS / "data" / "handbook"
FLOW = """
inputs: {q: {type: str}}
outputs: {paths: $paths.value, text: $search.text, results: $search.results}
nodes:
  search: {type: retrieve.fts, inputs: {query: $inputs.q}, config: CONFIG}
  paths: {type: data.extract, inputs: {data: $search.results}, config: {path: "[*].path"}}
"""


@pytest.mark.parametrize(
    ("question", "paths"),
    [
        ("How long is the warranty on a tent?", ["warranty.md"]),
        ("When is the phone line open?", ["support.md"]),
        ("How do I reset my password?", ["accounts.md"]),
        ("express shipping before 2 pm", ["shipping.md"]),
        ("How long does a refund take?", ["refunds.md"]),  # FTS5's own IDF put shipping.md ("takes") first
        ("What does the warranty not cover?", ["warranty.md"]),
        ("what is it?", []),
        ('"; DROP TABLE handbook; -- NEAR(refund*', ["refunds.md"]),
    ],
)
async def test_search_a_directory_in_memory(question: str, paths: list[str]) -> None:
    config = json.dumps({"documents": str(HANDBOOK), "table": "handbook", "limit": 1})
    result, _ = await run_flow(FLOW.replace("CONFIG", config), {"q": question})
    assert result.status == "succeeded", result.error
    assert result.outputs is not None and result.outputs["paths"] == paths
    if paths:
        (hit,) = result.outputs["results"]
        assert set(hit) == {"path", "title", "text", "score"} and hit["score"] > 0
        assert result.outputs["text"] == hit["text"]


async def test_index_command_builds_the_table_the_node_reads(cli: CLI, tmp_path: Path) -> None:
    db = tmp_path / "docs.db"
    built = cli("index", str(HANDBOOK), "--table", "handbook", "--db", str(db), "--chunk-chars", "200", "--json")
    assert built.code == 0, built.err
    assert built.json() == {"db": str(db), "table": "handbook", "passages": 15}
    again = cli("index", str(HANDBOOK), "--table", "handbook", "--db", str(db))
    assert again.code == 0 and "indexed 5 passages" in again.out
    flow = FLOW.replace("CONFIG", json.dumps({"db": "docs.db", "table": "handbook", "limit": 2}))
    result, _ = await run_flow(flow, {"q": "refund for sale items"}, path=tmp_path / "flow.yaml")
    assert result.outputs is not None and result.outputs["paths"][0] == "refunds.md"
    assert result.outputs["results"][0]["title"] == "Refunds"


async def test_missing_index_names_the_command(tmp_path: Path) -> None:
    flow = FLOW.replace("CONFIG", json.dumps({"db": "none.db", "table": "docs"}))
    result, store = await run_flow(flow, {"q": "x"}, path=tmp_path / "flow.yaml")
    assert result.status == "failed" and "flowstudio index DIR --table docs --db none.db" in str(result.error)
    assert store.steps(result.run_id)[0].error_kind == "not_found"


def test_bad_index_arguments(cli: CLI, tmp_path: Path) -> None:
    bad = cli("index", str(HANDBOOK), "--table", "no-dashes", "--db", str(tmp_path / "x.db"))
    assert bad.code == 2 and "table name 'no-dashes'" in bad.err


def test_questions_become_safe_queries() -> None:
    assert fts_query("What's the refund policy?") == '"s" OR "refund" OR "policy"'
    assert fts_query('a "quoted" NEAR(x*)') == '"quoted" OR "near" OR "x"'
    assert fts_query("?!") == ""
