"""The optimizer on a two-node flow: blame points at the node that needs changing, its moves
come first, and the report says which node each accepted change touched."""

from __future__ import annotations

from pathlib import Path

from studio.optimize import prepare
from studio.optimize.optimization import Optimization
from studio.store import MemoryStore
from tests.optimize.conftest import Task, options, rows, write_jsonl

FLOW = r"""flowstudio: 1
name: opt-two-nodes
inputs:
  text: {type: str}
outputs:
  label: $label.text
models:
  default:
    model: scripted
    retry_backoff_s: 0
    script:
      - {match: "^Summarise: ", reply: "a review"}
      - {match: "(?s)one of: negative, positive.*\\bgood\\b[^\\n]*\\nLabel:$", reply: positive}
      - {match: "(?s)one of: negative, positive.*\\bbad\\b[^\\n]*\\nLabel:$", reply: negative}
      - {match: "Label:$", reply: unsure, chance: 0.5}
      - {match: "\\bgood\\b[^\\n]*\\nLabel:$", reply: positive}
      - {match: "\\bbad\\b[^\\n]*\\nLabel:$", reply: negative}
nodes:
  note:
    type: llm.generate
    inputs: {review: $inputs.text}
    config: {form: completion, prompt: "Summarise: {{ review }}"}
  label:
    type: llm.generate
    inputs: {note: $note.text, review: $inputs.text}
    config: {form: completion, prompt: "Note: {{ note }}\nText: {{ review }}\nLabel:"}
"""
"""`label` answers "unsure" unless its instructions list the labels (re-sampled, half the time it answers right); `note`
cannot matter."""


def task(folder: Path) -> Task:
    flow = folder / "flow.yaml"
    flow.write_text(FLOW, encoding="utf-8")
    return Task(
        folder,
        flow,
        write_jsonl(folder / "train.jsonl", rows(12, 0)),
        write_jsonl(folder / "dev.jsonl", rows(16, 1)),
        write_jsonl(folder / "test.jsonl", rows(8, 2)),
        folder / "ledger.jsonl",
    )


async def test_blame_aims_the_search_and_the_report_names_the_node(tmp_path: Path) -> None:
    optimization = Optimization(prepare(options(task(tmp_path), 400)), MemoryStore())
    result = await optimization.run()
    search = optimization.search
    assert search is not None
    assert search.blamed and set(search.blamed) == {"label"}
    report = result.report
    assert report["blamed"] == search.blamed
    assert report["after"]["dev"] == 1.0
    accepted = report["accepted"]
    assert accepted and accepted[0]["node"] == "label"
    assert all(row["node"] != "note" for row in accepted)
    assert result.report["calls"] <= 400
    first_round = [c for c in search.candidates if c.round == 1]
    assert first_round and search.touched[first_round[0].id] == "label"  # the blamed node's moves first
    [markdown] = [p for p in result.report["reports"] if p.endswith(".md")]
    text = Path(markdown).read_text(encoding="utf-8")
    assert "| label |" in text and "pointed at: label" in text
