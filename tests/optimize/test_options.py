"""Before any call: no demo may be an example the candidates are scored on. Train examples that dev
has too are left out, one set given as both is split, too few left is refused, and each is said."""

from __future__ import annotations

import json

import pytest

from studio.evaluate.datasets import DataError, Dataset
from studio.optimize import prepare
from studio.optimize.options import Prepared
from tests.optimize.conftest import DEMO_RULES, HALF_RULES, MakeTask, Task, options, rows, write_jsonl
from tests.optimize.test_search import optimize


def _texts(dataset: Dataset) -> set[str]:
    return {str(e.inputs["text"]) for e in dataset.examples}


def _apart(prepared: Prepared) -> bool:
    """No example in both, and each set's examples numbered from 0 as the search expects."""
    numbered = all(
        [e.index for e in d.examples] == list(range(len(d.examples))) for d in (prepared.train, prepared.dev)
    )
    return numbered and not _texts(prepared.train) & _texts(prepared.dev)


def test_train_examples_that_dev_has_too_are_left_out_of_train(make_task: MakeTask) -> None:
    task = make_task(HALF_RULES)
    dev = rows(16, 1)
    write_jsonl(task.train, [*rows(12, 0), *dev[:3]])
    write_jsonl(task.dev, dev)
    prepared = prepare(options(task))
    assert (len(prepared.train.examples), len(prepared.dev.examples)) == (12, 16) and _apart(prepared)
    assert prepared.notes == (
        "3 train examples also in the dev set (same inputs) left out of train, so no demo is an example "
        "candidates are scored on",
    )


def _same_as_train(task: Task) -> None:
    write_jsonl(task.dev, [*map(json.loads, task.train.read_text(encoding="utf-8").splitlines())])


def test_one_set_given_as_train_and_dev_is_split_a_third_for_dev(make_task: MakeTask) -> None:
    task = make_task(HALF_RULES)
    _same_as_train(task)
    prepared = prepare(options(task))
    assert (len(prepared.train.examples), len(prepared.dev.examples)) == (8, 4) and _apart(prepared)
    order = [json.loads(line)["text"] for line in task.train.read_text(encoding="utf-8").splitlines()]
    assert _texts(prepared.dev) == set(order[::3]), "every third, from the first: the same on every run"
    assert prepared.notes[0].startswith("train and dev are the same examples: 4 of them (every third) are dev and 8")


def test_a_train_set_mostly_in_dev_is_refused_before_any_call(make_task: MakeTask) -> None:
    task = make_task(HALF_RULES)
    dev = rows(16, 1)
    write_jsonl(task.train, [*rows(3, 0), *dev[:9]])
    write_jsonl(task.dev, dev)
    with pytest.raises(DataError, match="9 of the train set's 12 examples are in the dev set too") as refused:
        prepare(options(task))
    assert refused.value.file == str(task.train)
    assert task.ledger_calls() == 0


def test_test_examples_seen_in_train_or_dev_are_counted(make_task: MakeTask) -> None:
    task = make_task(HALF_RULES)
    write_jsonl(task.test, [*rows(6, 2), *rows(12, 0)[:2]])
    prepared = prepare(options(task, test=str(task.test)))
    assert prepared.notes == ("2 of 8 test examples are in train or dev too: the test score is not all held out",)
    assert prepare(options(task)).notes == ()


async def test_the_report_says_what_the_checks_changed(make_task: MakeTask) -> None:
    task = make_task(DEMO_RULES)
    _same_as_train(task)
    result, _ = await optimize(task)
    (note,) = result.report["notes"]
    assert note.startswith("train and dev are the same examples")
    assert f"Note: {note}." in (task.folder / "flow.optimized.report.md").read_text()
