"""The optimizer proposes a cascade for a node on a dear alias when a cheaper one exists, and
the Pareto front shows it against the plain node (score against cost per example)."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.optimize import prepare
from studio.optimize.optimization import Optimization
from studio.store import MemoryStore
from tests.optimize.conftest import options, rows, write_jsonl

RULES = r"""
      - {match: "\\bgood\\b[^\\n]*\\nLabel:$", reply: positive}
      - {match: "\\bgood\\b[^\\n]*\\nJSON: \\{\"label\": \"$", reply: 'positive"}'}
      - {match: "JSON: \\{\"label\": \"$", reply: 'unsure"}'}
      - {reply: unsure}"""
FLOW = (
    """flowstudio: 1
name: opt-cascade
inputs:
  text: {type: str}
outputs:
  label: $answer.OUT
models:
  default:
    model: scripted
    input_cost_per_token: 0.001
    output_cost_per_token: 0.002
    script:"""
    + RULES
    + """
  small:
    model: scripted
    script:"""
    + RULES
    + """
nodes:
  answer:
    inputs: {review: $inputs.text}
"""
)
GENERATE = """    type: llm.generate
    config:
      form: completion
      prompt: "Text: {{ review }}\\nLabel:"
"""
STRUCTURED = """    type: llm.structured
    config: {prompt: "Text: {{ review }}", fields: {label: str}, retries: 0}
"""


@pytest.mark.parametrize(("node", "out"), [(GENERATE, "text"), (STRUCTURED, "label")], ids=["generate", "structured"])
async def test_a_cascade_onto_the_cheaper_alias_is_raced_and_on_the_front(tmp_path: Path, node: str, out: str) -> None:
    flow = tmp_path / "flow.yaml"
    flow.write_text(FLOW.replace("OUT", out) + node, encoding="utf-8")
    train = write_jsonl(tmp_path / "train.jsonl", rows(8, 0))
    dev = write_jsonl(tmp_path / "dev.jsonl", rows(8, 1))
    made = options(type("T", (), {"flow": flow, "train": train, "dev": dev})(), 200, proposer="none")  # type: ignore[arg-type]
    optimization = Optimization(prepare(made), MemoryStore())
    result = await optimization.run()
    assert optimization.search is not None
    move = "answer: cascade: small answers, default when it is unsure"
    raced = [c.move for c in optimization.search.candidates]
    found = [c for c in optimization.search.candidates if c.move == move]
    assert len(found) == 1, raced
    cascade = found[0]
    before = result.report["before"]["dev"]
    assert cascade.score == before == 0.5 and cascade.cost_per_example == 0  # the student agrees: no escalation
    assert cascade.edits[("nodes", "answer", "config", "teacher")] == "default"
    front = result.report["pareto"]
    assert front[0]["cost_per_example"] == 0 and front[0]["score"] == before  # cheaper at the same score
