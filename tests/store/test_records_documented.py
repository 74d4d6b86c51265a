"""Every field of a stored record says what it holds (a docstring under it)."""

from __future__ import annotations

import ast
import dataclasses
import inspect

import pytest

from studio.store import base

RECORDS = [base.RunRecord, base.StepRecord, base.CallRecord, base.ExperimentRecord]


def _documented_fields(cls: type) -> set[str]:
    body = ast.parse(inspect.getsource(cls)).body[0]
    assert isinstance(body, ast.ClassDef)
    found = set()
    for statement, following in zip(body.body, body.body[1:], strict=False):
        is_doc = isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and is_doc:
            found.add(statement.target.id)
    return found


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
def test_every_field_of_a_stored_record_has_a_docstring(record: type) -> None:
    names = {f.name for f in dataclasses.fields(record)}
    assert names - _documented_fields(record) == set()
