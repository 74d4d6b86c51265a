"""A node type installed by another distribution (an entry point in `flowstudio.nodes`) takes part
wherever a built-in does: the palette, the model checks, the spans, export and the optimizer's
topology moves all read what the node class declares, never a list of built-in type names."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from studio.editor.canvas import palette
from studio.editor.document import starter
from studio.export.writer import export_flow
from studio.flow.spec import load_flow
from studio.optimize.topology import topology_moves
from studio.plugins import plugins
from studio.runtime import registry
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine
from studio.runtime.model_checks import capability_warnings
from studio.store import MemoryStore
from studio.telemetry.hook import OtelHook
from studio.telemetry.spans import declared_kind

PLUGIN = '''\
"""acme's flowstudio nodes."""

from typing import ClassVar

from nodes.llm_generate import Generate
from nodes.text_template import Template
from studio.node import Role, Tunable


class Ask(Generate):
    """Ask acme's oracle."""

    tunable = Tunable(fields=("instructions",), output="text", drafts=True)
    starter = {"prompt": "Ask acme: {{ question }}"}
    span_kind = "TOOL"
    scripted_replies = "an acme verdict"

    def model_needs(self) -> list[tuple[tuple[str, ...], str]]:
        return [(("logprobs",), "weighs acme's verdicts by logprobs")]


class Shape(Template):
    """Reshape text acme's way."""

    roles: ClassVar[frozenset[Role]] = frozenset({"template"})
'''

FLOW = """\
flowstudio: 1
name: acme
inputs: {question: {type: str}}
outputs: {answer: $ask.text}
models: {default: {model: scripted, script: [{reply: yes}]}}
nodes:
  ask:
    type: acme.ask
    inputs: {question: $inputs.question}
    config: {prompt: "Ask acme: {{ question }}"}
"""


def _clear() -> None:
    plugins.cache_clear()
    registry._load.cache_clear()
    palette.cache_clear()


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An `acme_flowstudio` distribution on sys.path, with two node types as entry points."""
    site = tmp_path / "site"
    (site / "acme_flowstudio").mkdir(parents=True)
    (site / "acme_flowstudio" / "__init__.py").write_text(PLUGIN, encoding="utf-8")
    info = site / "acme_flowstudio-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-flowstudio\nVersion: 1.2\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        textwrap.dedent("""\
            [flowstudio.nodes]
            acme.ask = acme_flowstudio:Ask
            acme.shape = acme_flowstudio:Shape
            """),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(site))
    _clear()
    flow = tmp_path / "acme.yaml"
    flow.write_text(FLOW, encoding="utf-8")
    yield flow
    monkeypatch.delitem(sys.modules, "acme_flowstudio", raising=False)
    monkeypatch.undo()
    _clear()


def test_the_palette_offers_it_with_its_starter_config(installed: Path) -> None:
    (entry,) = [e for e in palette() if e["type"] == "acme.ask"]
    assert entry["description"] == "Ask acme's oracle."
    assert "question" in [port["name"] for port in entry["card"]["inputs"]]
    assert entry["card"]["errors"] == []
    assert starter("acme.ask") == {"prompt": "Ask acme: {{ question }}"}


def test_model_checks_warn_about_the_capability_it_declares(installed: Path) -> None:
    (warning,) = capability_warnings(compile_flow(load_flow(installed)))
    assert "node ask (acme.ask) weighs acme's verdicts by logprobs" in warning.message
    assert "scripted has no logprobs" in warning.message


async def test_its_steps_are_spans_of_the_kind_it_declares(installed: Path) -> None:
    memory = InMemorySpanExporter()
    hook = OtelHook("memory", exporter=memory)
    result = await Engine(MemoryStore(), hooks=[hook]).run(compile_flow(load_flow(installed)), {"question": "Q?"})
    hook.close()
    assert result.status == "succeeded", result.error
    (step,) = [s for s in memory.get_finished_spans() if s.name == "execute_tool ask"]
    assert step.attributes is not None and step.attributes["openinference.span.kind"] == "TOOL"
    assert declared_kind("acme.ask") == "TOOL"  # what a stored run's export reads
    assert declared_kind("acme.shape") == "CHAIN"


def test_export_depends_on_its_distribution_and_asks_for_its_scripted_replies(installed: Path, tmp_path: Path) -> None:
    done = export_flow(installed, tmp_path / "out")
    pyproject = (done.out / "pyproject.toml").read_text(encoding="utf-8")
    assert '"acme-flowstudio>=1.2"' in pyproject
    assert any("(acme.ask) needs scripted replies (an acme verdict)" in note for note in done.notes)


def test_topology_moves_apply_to_it_and_add_the_built_in_of_a_role(installed: Path) -> None:
    moves = topology_moves(compile_flow(load_flow(installed)))
    tidy = [m for m in moves if ("nodes", "ask_tidy") in m.edits]
    assert tidy and tidy[0].edits["nodes", "ask_tidy"]["type"] == "text.template"
    assert any(("nodes", "ask_answer") in m.edits for m in moves)
    assert registry.with_role("template") == "text.template"  # flowstudio's own first, then by key
    assert registry.get("acme.shape") is not None
