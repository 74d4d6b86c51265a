"""Datasets for batch runs and the optimizer: JSONL or CSV rows mapped onto a flow.

Columns map to flow inputs and expected outputs by name; `--map INPUT=COLUMN` and
`--expect OUTPUT=COLUMN` say where they differ. Every row is read and checked against the
flow's inputs before anything runs, so a bad file costs no model call, and every error
names the file, the row's line and the column.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studio.errors import FlowError, InputError
from studio.flow.paths import PathRefused, read_capped
from studio.flow.values import MAX_DEPTH, json_depth
from studio.runtime.compiler import Plan
from studio.runtime.engine import prepare_inputs

MAX_BYTES = 256 * 1024 * 1024
_TEXT_TYPES = {"str", "any"}


class DataError(FlowError):
    """A dataset file is unreadable, empty, or a row does not fit the flow."""


@dataclass(frozen=True)
class Example:
    """One dataset row, ready to run."""

    index: int
    """Position in the dataset, from 0; the key a resumed batch matches runs by."""
    line: int
    """Line of the row in the file, from 1 (CSV: the line the row starts on)."""
    row: dict[str, Any]
    """The row as read: what a metric receives as `example`."""
    inputs: dict[str, Any]
    """The flow inputs taken from the row, checked and completed with defaults."""
    expected: dict[str, Any]
    """Expected values by flow output name."""


@dataclass
class Dataset:
    """A checked dataset: its examples, the flow inputs and expected columns they map, and the file's hash."""

    path: Path
    examples: list[Example]
    columns: list[str]
    sha256: str
    inputs: dict[str, str] = field(default_factory=dict)
    """Flow input → column."""
    expect: dict[str, str] = field(default_factory=dict)
    """Flow output → column holding its expected value."""


def read_rows(path: str | Path) -> tuple[list[tuple[int, dict[str, Any]]], list[str], str]:
    """(line, row) pairs, the columns in first-seen order, and the file's SHA-256."""
    source = Path(path)
    if "\x00" in str(path) or not source.is_file():
        raise DataError("dataset file not found", file=repr(str(path))[1:-1])
    try:
        raw = read_capped(source, MAX_BYTES, "dataset")
    except PathRefused as err:
        message = f"dataset is larger than {MAX_BYTES // 2**20} MiB" if "larger than" in str(err) else str(err)
        raise DataError(message, file=str(path)) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DataError("not UTF-8 text", file=str(path), line=line) from None
    if source.suffix.lower() == ".csv":
        rows, columns = _csv_rows(text, str(path))
    else:
        rows, columns = _jsonl_rows(text, str(path))
    if not rows:
        raise DataError("the dataset has no rows", file=str(path))
    return rows, columns, hashlib.sha256(raw).hexdigest()


def _jsonl_rows(text: str, file: str) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    rows: list[tuple[int, dict[str, Any]]] = []
    columns: dict[str, None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if json_depth(line) > MAX_DEPTH:
            raise DataError(f"row is JSON nested deeper than {MAX_DEPTH} levels", file=file, line=number)
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(f"row is not valid JSON: {err.msg} (column {err.colno})", file=file, line=number) from None
        if not isinstance(row, dict):
            raise DataError(f"row must be a JSON object, got {type(row).__name__}", file=file, line=number)
        columns.update(dict.fromkeys(row))
        rows.append((number, row))
    return rows, list(columns)


def _csv_rows(text: str, file: str) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[tuple[int, dict[str, Any]]] = []
    header: list[str] | None = None
    start = 1
    try:
        for cells in reader:
            line, start = start, reader.line_num + 1
            if not any(cell.strip() for cell in cells):
                continue
            if header is None:
                header = [cell.strip() for cell in cells]
                if len(set(header)) != len(header) or "" in header:
                    raise DataError("the header has an empty or repeated column name", file=file, line=line)
                continue
            if len(cells) != len(header):
                raise DataError(f"row has {len(cells)} cells, the header has {len(header)}", file=file, line=line)
            rows.append((line, dict(zip(header, cells, strict=True))))
    except csv.Error as err:
        raise DataError(f"row is not valid CSV: {err}", file=file, line=reader.line_num) from None
    return rows, header or []


def _check_names(pairs: Mapping[str, str], allowed: Mapping[str, Any], option: str, what: str, file: str) -> None:
    for name in pairs:
        if name not in allowed:
            raise InputError(f"{name!r} is not a flow {what}; the flow has {sorted(allowed)}", file=file, field=option)


def load_dataset(
    path: str | Path,
    plan: Plan,
    *,
    map_inputs: Mapping[str, str] | None = None,
    expect: Mapping[str, str] | None = None,
    limit: int | None = None,
) -> Dataset:
    """Read a dataset and map it onto `plan`: every row is checked before anything runs."""
    rows, columns, digest = read_rows(path)
    file = str(path)
    flow_file = plan.flow.file
    _check_names(map_inputs or {}, plan.inputs, "--map", "input", flow_file)
    _check_names(expect or {}, plan.outputs, "--expect", "output", flow_file)
    inputs = {name: name for name in plan.inputs if name in columns} | dict(map_inputs or {})
    expected = {name: name for name in plan.outputs if name in columns} | dict(expect or {})
    for option, pairs in (("--map", inputs), ("--expect", expected)):
        for name, column in pairs.items():
            if column not in columns:
                raise DataError(
                    f"{option} {name}={column}: no column {column!r}; the columns are {columns}", file=file, line=1
                )
    missing = [name for name, spec in plan.inputs.items() if spec.required and name not in inputs]
    if missing:
        raise DataError(
            f"no column for the required flow input {missing[0]!r}; the columns are {columns} "
            f"(use --map {missing[0]}=COLUMN)",
            file=file,
        )
    chosen = rows[:limit] if limit is not None else rows
    examples = [_example(index, line, row, inputs, expected, plan, file) for index, (line, row) in enumerate(chosen)]
    return Dataset(Path(path), examples, columns, digest, inputs, expected)


def _example(
    index: int,
    line: int,
    row: dict[str, Any],
    inputs: Mapping[str, str],
    expected: Mapping[str, str],
    plan: Plan,
    file: str,
) -> Example:
    values: dict[str, Any] = {}
    for name, column in inputs.items():
        if column not in row:
            if plan.inputs[name].required or column != name:
                raise DataError(
                    f"row has no column {column!r} (flow input {name!r})", file=file, line=line, field=column
                )
            continue
        value = row[column]
        if isinstance(value, str) and plan.inputs[name].type not in _TEXT_TYPES and file.lower().endswith(".csv"):
            value = _json_or_text(value)
        values[name] = value
    try:
        values = prepare_inputs(plan, values)
    except InputError as err:
        name = (err.field or "").removeprefix("inputs.")
        column = inputs.get(name, name)
        raise DataError(err.message, file=file, line=line, field=column) from None
    wanted: dict[str, Any] = {}
    for name, column in expected.items():
        if column not in row:
            raise DataError(f"row has no column {column!r} (expected {name!r})", file=file, line=line, field=column)
        wanted[name] = row[column]
    return Example(index, line, row, values, wanted)


def _json_or_text(value: str) -> Any:
    """A CSV cell for a typed input: JSON when it parses (`3`, `[1, 2]`), else the text."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value
