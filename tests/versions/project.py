"""A small project for version tests: a flow calling a sub-flow, on a scripted-model file."""

from __future__ import annotations

from pathlib import Path

MAIN = """flowstudio: 1
name: greet
inputs:
  word: {type: str}
outputs:
  loud: $call.loud
  said: $say.text
models:
  default: {model: scripted/scripts/model.yaml}
nodes:
  call:
    type: flow.call
    inputs: {item: $inputs.word}
    config: {flow: sub/shout.yaml}
  say:
    type: llm.generate
    inputs: {word: $inputs.word}
    config:
      prompt: "Say {{ word }} politely."
"""
SUB = """flowstudio: 1
name: shout
inputs:
  item: {type: str}
outputs:
  loud: $up.text
nodes:
  up:
    type: text.template
    inputs: {item: $inputs.item}
    config: {template: "{{ item | upper }}!"}
"""
SCRIPT = "script:\n  - {reply: hello}\n"


def make(root: Path) -> Path:
    """Write the project under `root`; returns the main flow's path."""
    (root / "sub").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "sub" / "shout.yaml").write_text(SUB)
    (root / "scripts" / "model.yaml").write_text(SCRIPT)
    main = root / "greet.yaml"
    main.write_text(MAIN)
    return main


def edit(path: Path, old: str, new: str) -> None:
    """Replace text in a file (it must be there)."""
    text = path.read_text()
    assert old in text, (old, path)
    path.write_text(text.replace(old, new))
