"""Datasets: JSONL and CSV rows mapped onto a flow; every bad row is named. Task generators."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from studio.errors import InputError
from studio.evaluate.datasets import DataError, load_dataset, read_rows
from studio.evaluate.tasks import (
    CHANNELS,
    CITIES,
    ITEMS,
    NAMES,
    NEGATIVE,
    POSITIVE,
    SPLITS,
    SUBJECTS,
    TASKS,
    TOPICS,
    generate,
    part,
    write,
)
from studio.flow.spec import load_flow, load_flow_text
from studio.runtime.compiler import Plan, compile_flow
from tests.conftest import FIXTURES, ROOT

DATA = ROOT / "tests" / "data"


@pytest.fixture
def qa() -> Plan:
    return compile_flow(load_flow(FIXTURES / "qa.yaml"))


def _file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_jsonl_maps_columns_by_name_and_skips_blank_lines(qa: Plan) -> None:
    data = load_dataset(DATA / "qa.jsonl", qa)
    assert (data.inputs, data.expect) == ({"question": "question"}, {"answer": "answer"})
    assert [e.line for e in data.examples] == [1, 2, 4, 5]
    first = data.examples[0]
    assert first.inputs == {"question": "What is 2 + 2?"} and first.expected == {"answer": "4"}
    assert first.row == {"question": "What is 2 + 2?", "answer": "4"}
    assert len(data.sha256) == 64


def test_csv_with_map_expect_and_limit(qa: Plan) -> None:
    data = load_dataset(DATA / "qa.csv", qa, map_inputs={"question": "q"}, expect={"answer": "gold"}, limit=2)
    assert data.columns == ["id", "q", "gold"]
    assert [(e.line, e.inputs, e.expected) for e in data.examples] == [
        (2, {"question": "What is 2 + 2?"}, {"answer": "4"}),
        (3, {"question": "What is the capital of France?"}, {"answer": "Paris"}),
    ]


def test_csv_cells_of_typed_inputs_parse_as_json(tmp_path: Path) -> None:
    plan = compile_flow(
        load_flow_text(
            "flowstudio: 1\nname: typed\ninputs: {n: {type: int}, tags: {type: 'list[str]'}, s: {type: str, default: x}}\n"
            "outputs: {n: $inputs.n}\nnodes:\n  a: {type: text.template, config: {template: x}}\n"
        )
    )
    path = _file(tmp_path, "t.csv", 'n,tags,s\n3,"[""a"", ""b""]",12\n')
    (example,) = load_dataset(path, plan).examples
    assert example.inputs == {"n": 3, "tags": ["a", "b"], "s": "12"}


@pytest.mark.parametrize(
    ("name", "text", "where", "message"),
    [
        ("empty.jsonl", "\n\n", "empty.jsonl", "no rows"),
        ("bad.jsonl", '{"question": "a", "answer": "b"}\n{"question": oops}\n', "bad.jsonl:2", "not valid JSON"),
        ("list.jsonl", '["question"]\n', "list.jsonl:1", "must be a JSON object"),
        (
            "gap.jsonl",
            '{"question": "a", "answer": "b"}\n{"answer": "c"}\n',
            "gap.jsonl:2 at question",
            "no column 'question'",
        ),
        (
            "noexp.jsonl",
            '{"question": "a", "answer": "b"}\n{"question": "c"}\n',
            "noexp.jsonl:2 at answer",
            "no column 'answer'",
        ),
        ("cells.csv", "question,answer\na,b\nc\n", "cells.csv:3", "1 cells, the header has 2"),
        ("header.csv", "question,question\na,b\n", "header.csv:1", "repeated column"),
        ("other.jsonl", '{"text": "a"}\n', "other.jsonl", "required flow input 'question'"),
        ("type.jsonl", '{"question": 5}\n', "type.jsonl:1 at question", "must be str"),
    ],
)
def test_bad_data_names_file_row_and_column(
    qa: Plan, tmp_path: Path, name: str, text: str, where: str, message: str
) -> None:
    with pytest.raises(DataError) as caught:
        load_dataset(_file(tmp_path, name, text), qa)
    assert str(caught.value).startswith(str(tmp_path / where) + ":"), str(caught.value)
    assert message in str(caught.value)


def test_missing_file_and_bad_encoding(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not found"):
        read_rows(tmp_path / "nope.jsonl")
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b'{"a": "x"}\n{"a": "caf\xe9"}\n')
    with pytest.raises(DataError, match=re.escape("latin.jsonl:2: not UTF-8")):
        read_rows(path)


def test_mapping_to_unknown_names_or_columns(qa: Plan) -> None:
    with pytest.raises(InputError, match="'prompt' is not a flow input"):
        load_dataset(DATA / "qa.jsonl", qa, map_inputs={"prompt": "question"})
    with pytest.raises(InputError, match="'label' is not a flow output"):
        load_dataset(DATA / "qa.jsonl", qa, expect={"label": "answer"})
    with pytest.raises(DataError, match=r"--expect answer=gold: no column 'gold'"):
        load_dataset(DATA / "qa.jsonl", qa, expect={"answer": "gold"})


# Task generators


@pytest.mark.parametrize("task", sorted(TASKS))
def test_tasks_are_seeded_and_balanced_enough(task: str) -> None:
    rows = generate(task, "train", 60, seed=3)
    assert rows == generate(task, "train", 60, seed=3)
    assert rows != generate(task, "train", 60, seed=4)
    if "label" in rows[0]:
        assert len({r["label"] for r in rows}) == (2 if task in ("sentiment", "ticket") else 4)


POOLS: dict[str, list[str]] = {
    "sentiment": [*POSITIVE, *NEGATIVE, *SUBJECTS],
    "topic": [word for words in TOPICS.values() for word in words],
    "extraction": [*NAMES, *CITIES],
    "ticket": [*POSITIVE, *NEGATIVE, *SUBJECTS, *NAMES, *CITIES, *CHANNELS],
    "order": [*NAMES, *ITEMS],
}


def _used(task: str, rows: list[dict[str, object]]) -> set[str]:
    text = " ".join(str(r.get("text", r.get("question"))) for r in rows)
    numbers = set(re.findall(r"\d+", text)) if task in ("arithmetic", "ticket", "order") else set()
    if task == "arithmetic":
        return numbers
    return numbers | {word for word in POOLS[task] if re.search(rf"\b{re.escape(word)}\b", text)}


def _words(used: set[str]) -> re.Pattern[str]:
    """Any of `used` as a whole word, the longest first (one pattern: a pattern per word made this
    test take half a minute)."""
    return re.compile(r"\b(?:" + "|".join(re.escape(w) for w in sorted(used, key=len, reverse=True)) + r")\b")


def _template(text: str, words: re.Pattern[str]) -> str:
    return re.sub(r"\d+", "_", words.sub("_", text))


@pytest.mark.parametrize("task", sorted(TASKS))
def test_splits_share_no_pool_word_or_template(task: str) -> None:
    rows = {split: generate(task, split, 300) for split in SPLITS}
    used = {split: _used(task, rows[split]) for split in SPLITS}
    assert used["train"] and used["test"]
    assert not used["train"] & used["test"] and not used["dev"] & used["test"] and not used["train"] & used["dev"]
    every = _words(set().union(*used.values()))
    templates = {
        split: {_template(str(r.get("text", r.get("question"))), every) for r in rows[split]} for split in SPLITS
    }
    assert not templates["train"] & templates["test"] and not templates["dev"] & templates["test"]


def test_pool_parts_are_disjoint_and_cover_the_pool() -> None:
    pool = list(range(30))
    parts = [part(pool, s) for s in SPLITS]
    assert sorted(n for share in parts for n in share) == pool


def test_write_makes_three_files(tmp_path: Path) -> None:
    written = write("topic", tmp_path, sizes=(2, 3, 4))
    assert {s: len(p.read_text().splitlines()) for s, p in written.items()} == {"train": 2, "dev": 3, "test": 4}
