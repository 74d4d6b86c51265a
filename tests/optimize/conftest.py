"""Fixtures for the optimizer's tests: scripted flows whose model answers right only under some prompts.

The scripted model matches regexes over the whole prompt, so a rule can demand a demo
(`Label: WORD` followed by a new line appears only in a solved example) or a sentence the
rewrite library writes, and answer correctly only then.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from studio.optimize import OptimizeOptions

NOUNS = ("film", "meal", "hotel", "book", "song", "trip", "game", "show", "class", "phone", "lamp", "park")

SCRIPTED_MODELS = """\
models:
  default:
    model: scripted
    retry_backoff_s: 0
    script:
{rules}
"""
"""The models block of the fixture flows: the scripted model, its rules filled in by `format`."""

HEADER = (
    """\
flowstudio: 1
name: opt-{name}
description: Says whether a short review is positive or negative.
inputs:
  text: {{type: str, description: A short review}}
outputs:
  label: $answer.text
"""
    + SCRIPTED_MODELS
    + """\
nodes:
  answer:   # the node the optimizer tunes
    type: llm.generate
    inputs: {{review: $inputs.text}}
    config:
      form: completion
      prompt: "Text: {{{{ review }}}}\\nLabel:"
"""
)

DEMO_RULES = r"""      - {match: "(?s)Label: \\w+\\n.*\\bgood\\b[^\\n]*\\nLabel:$", reply: positive}
      - {match: "(?s)Label: \\w+\\n.*\\bbad\\b[^\\n]*\\nLabel:$", reply: negative}
      - {reply: unsure}"""
"""Right only when the prompt holds a solved demo."""

CONSTRAINT_RULES = r"""      - {match: "(?s)one of: negative, positive.*\\bgood\\b[^\\n]*\\nLabel:$", reply: positive}
      - {match: "(?s)one of: negative, positive.*\\bbad\\b[^\\n]*\\nLabel:$", reply: negative}
      - {reply: unsure}"""
"""Right only when the instructions list the answers (the library's output-format rewrite)."""

HALF_RULES = r"""      - {match: "(?s)Label: \\w+\\n.*\\bbad\\b[^\\n]*\\nLabel:$", reply: negative}
      - {match: "(?s)\\bgood\\b[^\\n]*\\nLabel:$", reply: positive}
      - {reply: unsure}"""
"""Positive reviews are right zero-shot; negative ones only with a demo."""

FLAKY_RULES = r"""      - {match: "bad", error: {kind: server, times: 1}}
      - {match: "(?s)Label: \\w+\\n.*\\bgood\\b[^\\n]*\\nLabel:$", reply: positive}
      - {match: "(?s)Label: \\w+\\n.*\\bbad\\b[^\\n]*\\nLabel:$", reply: negative}
      - {reply: unsure}"""
"""Like DEMO_RULES, but each run's first call about a bad review fails once (a retried server error)."""

NOTHING_RULES = """      - {reply: unsure}"""
"""Wrong whatever the prompt."""


def rows(n: int, seed: int, *, quoted: bool = False) -> list[dict[str, str]]:
    """`n` labelled rows, half positive (`good`), half negative (`bad`); `quoted`: the word is a
    quote in a longer sentence (`was "good", they said`)."""
    rng = random.Random(seed)
    made = []
    for i in range(n):
        label = ("positive", "negative")[i % 2]
        word = "good" if label == "positive" else "bad"
        said = f'"{word}", they said' if quoted else word
        made.append({"text": f"the {rng.choice(NOUNS)} {seed * 100 + i} was {said}", "label": label})
    rng.shuffle(made)
    return made


def write_jsonl(path: Path, data: Sequence[Mapping[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in data), encoding="utf-8")
    return path


@dataclass
class Task:
    """A scripted flow and its train, dev and test files in a temporary folder."""

    folder: Path
    flow: Path
    train: Path
    dev: Path
    test: Path
    ledger: Path

    def ledger_calls(self) -> int:
        if not self.ledger.exists():
            return 0
        return len(self.ledger.read_text(encoding="utf-8").splitlines())


MakeTask = Callable[..., Task]


@pytest.fixture
def make_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MakeTask:
    """make_task(rules, train=12, dev=16, test=8): a task whose scripted calls go to a ledger file."""
    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv("FLOWSTUDIO_SCRIPTED_LEDGER", str(ledger))

    def make(rules: str, *, train: int = 12, dev: int = 16, test: int = 8, name: str = "task") -> Task:
        folder = tmp_path / name
        folder.mkdir()
        flow = folder / "flow.yaml"
        flow.write_text(HEADER.format(name=name, rules=rules), encoding="utf-8")
        return Task(
            folder,
            flow,
            write_jsonl(folder / "train.jsonl", rows(train, 0)),
            write_jsonl(folder / "dev.jsonl", rows(dev, 1)),
            write_jsonl(folder / "test.jsonl", rows(test, 2)),
            ledger,
        )

    return make


def options(task: Task, budget: int = 150, **extra: Any) -> OptimizeOptions:
    return OptimizeOptions(
        flow=str(task.flow),
        train=str(task.train),
        dev=str(task.dev),
        metric="exact",
        budget_calls=budget,
        minibatch=4,
        **extra,
    )
