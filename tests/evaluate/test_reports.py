"""`flowstudio experiments` as a table: every kind in 80 columns, names whole, a blame done."""

from __future__ import annotations

from rich.console import Console

from studio.evaluate.reports import experiment_row, print_experiments
from studio.store.base import ExperimentRecord

BATCH = {"status": "finished", "examples": 40, "score": 0.675, "errors": 0, "cost_usd": 0}


def _table(records: list[ExperimentRecord]) -> str:
    console = Console(width=80, record=True)
    print_experiments(records, console)
    return console.export_text()


def test_mixed_kinds_fit_80_columns_with_kind_and_flow_whole() -> None:
    records = [
        ExperimentRecord("723be76d53ae4730", "blame", "eval-ticket", summary={"calls": 506, "runs": {}}),
        ExperimentRecord("86cbd605d228444e", "batch", "eval-ticket", summary=BATCH),
        ExperimentRecord("33978fa42a1d4053", "optimize", "eval-ticket", summary={"status": "finished", "cost_usd": 0}),
        ExperimentRecord("0f0e0d0c0b0a0908", "batch", "eval-ticket"),
    ]
    text = _table(records)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80, text
    for record in records:
        row = next(line for line in lines if line.startswith(record.experiment_id))
        assert f"  {record.kind}  " in row and " eval-ticket " in row, row
    assert "done" in next(line for line in lines if line.startswith("723be76d")), "a blame with a summary is done"
    assert "unfinished" in next(line for line in lines if line.startswith("0f0e0d0c"))
    assert "0/40" in next(line for line in lines if line.startswith("86cbd605")), "errors of examples"
    assert "cost $" not in lines[0], "no column of zeros for local models"
    assert experiment_row(records[0])["status"] == "finished" and experiment_row(records[3])["status"] == "unfinished"


def test_a_cost_column_shows_once_something_cost_money() -> None:
    text = _table([ExperimentRecord("86cbd605d228444e", "batch", "qa", summary={**BATCH, "cost_usd": 0.0123})])
    assert "cost $" in text and "0.0123" in text
