"""text.split and data.extract: small helpers, as scenario tables."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nodes.text_split import split_text
from studio.errors import CompileError
from tests.nodes.runner import run_flow

TEXT = "First paragraph, short.\n\nSecond paragraph is longer. It has two sentences.\n\nThird."


@pytest.mark.parametrize(
    ("chunk_chars", "overlap", "chunks"),
    [
        (1000, 0, [TEXT]),
        (60, 0, ["First paragraph, short.", "Second paragraph is longer. It has two sentences.\n\nThird."]),
        (30, 0, ["First paragraph, short.", "Second paragraph is longer.", "It has two sentences.", "Third."]),
        (
            30,
            10,
            [
                "First paragraph,",
                "paragraph, short.",
                "short. Second paragraph is",
                "is longer.",
                "longer. It has two",
                "has two sentences.",
                "sentences. Third.",
            ],
        ),
        (
            10,
            0,
            [
                "First",
                "paragraph,",
                "short.",
                "Second",
                "paragraph",
                "is",
                "longer.",
                "It has",
                "two",
                "sentences.",
                "Third.",
            ],
        ),
    ],
)
async def test_split(chunk_chars: int, overlap: int, chunks: list[str]) -> None:
    config = json.dumps({"chunk_chars": chunk_chars, "overlap_chars": overlap})
    flow = f"inputs: {{t: {{type: str}}}}\noutputs: {{chunks: $s.chunks}}\nnodes:\n  s: {{type: text.split, inputs: {{text: $inputs.t}}, config: {config}}}\n"
    result, _ = await run_flow(flow, {"t": TEXT})
    assert result.outputs == {"chunks": chunks}, result.error
    assert all(len(c) <= chunk_chars for c in chunks)


def test_split_edge_cases() -> None:
    assert split_text("", 100) == []
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]


DATA = {"user": {"name": "Ann", "tags": ["a", "b"]}, "items": [{"id": 1, "price": 5}, {"id": 2, "price": 50}]}


@pytest.mark.parametrize(
    ("path", "data", "value", "error"),
    [
        ("user.name", DATA, "Ann", None),
        ("items[?price > `10`].id", DATA, [2], None),
        ("length(user.tags)", DATA, 2, None),
        ("user.name", json.dumps(DATA), "Ann", None),
        ("user.missing", DATA, None, None),
        ("[0]", [3, 4], 3, None),
        ("user.name", "{not json", None, "data is text but not valid JSON"),
    ],
)
async def test_extract(path: str, data: Any, value: Any, error: str | None) -> None:
    flow = f"inputs: {{d: {{type: any}}}}\noutputs: {{v: $x.value}}\nnodes:\n  x: {{type: data.extract, inputs: {{data: $inputs.d}}, config: {{path: {json.dumps(path)}}}}}\n"
    result, _ = await run_flow(flow, {"d": data})
    if error:
        assert result.status == "failed" and error in str(result.error)
    else:
        assert result.outputs == {"v": value}, result.error


async def test_extract_required_and_bad_paths() -> None:
    flow = "outputs: {v: $x.value}\nnodes:\n  x: {type: data.extract, inputs: {data: {a: 1}}, config: {path: b, required: true}}\n"
    result, _ = await run_flow(flow)
    assert result.status == "failed" and "path 'b' found nothing" in str(result.error)
    with pytest.raises(CompileError, match="invalid JMESPath expression"):
        await run_flow("nodes:\n  x: {type: data.extract, inputs: {data: 1}, config: {path: 'a[['}}\n")
    with pytest.raises(CompileError, match="overlap_chars must be at most half"):
        await run_flow(
            "nodes:\n  s: {type: text.split, inputs: {text: x}, config: {chunk_chars: 20, overlap_chars: 15}}\n"
        )
