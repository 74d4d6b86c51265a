"""Prompt flow batch data (JSONL and its column mapping) → a dataset for `flowstudio batch`."""

from __future__ import annotations

import json
import re
from pathlib import Path

from studio.errors import FlowError

MAX_DATA_BYTES = 256 * 1024 * 1024
"""Largest batch data file copied (the batch's own dataset cap)."""


def import_promptflow_run(data: Path, mapping: dict[str, str], out: Path, *, overwrite: bool = False) -> int:
    """Copy Prompt flow batch data (JSONL) into a dataset for `flowstudio batch`: each flow input
    named in `mapping` (input → `${data.column}` or a column name) gets its column's value. Returns
    the number of rows written."""
    if not data.is_file():
        raise FlowError("no such file", file=str(data))
    if out.exists() and not overwrite:
        raise FlowError("already exists; choose another --out or pass --force to replace it", file=str(out))
    if data.stat().st_size > MAX_DATA_BYTES:
        raise FlowError("the data file is too large", file=str(data))
    columns = {name: _column(source) for name, source in mapping.items()}
    rows = []
    for number, line in enumerate(data.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise FlowError("not a JSON object", file=str(data), line=number) from None
        if not isinstance(row, dict):
            raise FlowError("not a JSON object", file=str(data), line=number)
        for name, column in columns.items():
            if column not in row:
                raise FlowError(f"no column {column!r} for input {name!r}", file=str(data), line=number)
        rows.append(
            {**{k: v for k, v in row.items() if k not in columns.values()}, **{n: row[c] for n, c in columns.items()}}
        )
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


def _column(source: str) -> str:
    match = re.match(r"^\$\{data\.([^}]+)\}$", source.strip())
    return match.group(1) if match else source.strip()
