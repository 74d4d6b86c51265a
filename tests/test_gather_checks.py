"""Flows written for the old readiness rule: a list input gathering wires from branches is
skipped when one branch did not run. `validate` warns (exit 0, file, line, field, naming
control.join) and `fmt --fix` inserts the join, comments kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.flow.spec import load_flow_text
from studio.runtime.compiler import compile_flow
from studio.runtime.gather_checks import GatheredList, gathered_lists
from tests.conftest import CLI

OLD = """flowstudio: 1
name: old-gather
inputs:
  go: {type: bool}
outputs:
  summary: $summary.text
nodes:
  first:
    type: text.template
    when: inputs.go
    config: {template: one}
  second:
    type: text.template
    config: {template: two}
  # gathers both branches, Haystack style
  summary:
    type: text.template
    inputs:
      values: [$first.text, $second.text]   # the variadic idiom
    config: {template: "{{ values | join(', ') }}"}
"""

HEADER = "flowstudio: 1\nname: lists\ninputs: {go: {type: bool}}\nnodes:\n"
ROUTE = (
    "  route: {type: control.switch, inputs: {value: $inputs.go}, config: {cases: {'true': yes_}, default: no_}}\n"
    "  a: {type: text.template, inputs: {x: $route.yes_}, config: {template: a}}\n"
    "  b: {type: text.template, inputs: {x: $a.text}, config: {template: b}}\n"
    "  c: {type: text.template, config: {template: c}}\n"
)


def _lists(nodes: str) -> list[GatheredList]:
    return gathered_lists(compile_flow(load_flow_text(HEADER + ROUTE + nodes)))


@pytest.mark.parametrize(
    ("consumer", "expected"),
    [
        # a switch branch, and a node downstream of one, may not run
        (
            "t: {type: text.template, inputs: {v: [$route.yes_, $c.text]}, config: {template: x}}",
            [("t", "v", ("route",))],
        ),
        ("t: {type: text.template, inputs: {v: [$b.text, $c.text]}, config: {template: x}}", [("t", "v", ("b",))]),
        # wires that always run, the switch's `branch`, flow inputs and literals: nothing to say
        ("t: {type: text.template, inputs: {v: [$c.text, $route.branch, $inputs.go, 1]}, config: {template: x}}", []),
        # control.join / control.merge gather already
        ("t: {type: control.join, inputs: {options: [$a.text, $c.text]}}", []),
        # a single item is an ordinary wire
        ("t: {type: text.template, inputs: {v: [$a.text]}, config: {template: x}}", []),
    ],
)
def test_lists_gathering_wires_that_may_be_gone_are_found(
    consumer: str, expected: list[tuple[str, str, tuple[str, ...]]]
) -> None:
    assert [(g.node, g.port, g.skippable) for g in _lists("  " + consumer + "\n")] == expected


def test_validate_warns_naming_the_file_line_field_and_control_join(cli: CLI, tmp_path: Path) -> None:
    flow = tmp_path / "old.yaml"
    flow.write_text(OLD)
    done = cli("validate", str(flow))
    assert done.code == 0 and done.out.startswith("OK ")
    warning = f"warning: {flow}:19 at nodes.summary.inputs.values: this list gathers wires from first"
    assert warning in done.err and "control.join" in done.err and "fmt --fix" in done.err


def test_fmt_fix_inserts_a_join_and_the_flow_then_runs_when_a_branch_is_skipped(cli: CLI, tmp_path: Path) -> None:
    flow = tmp_path / "old.yaml"
    flow.write_text(OLD)
    before = cli("run", str(flow), "-i", "go=false", "--json").json()
    assert before["outputs"] == {"summary": None}  # the old idiom, silently skipped
    assert cli("fmt", "--fix", "--check", str(flow)).code == 1 and flow.read_text() == OLD  # nothing written
    fixed = cli("fmt", "--fix", str(flow))
    assert fixed.code == 0 and "nodes.summary.inputs.values reads $summary_values.values" in fixed.out
    text = flow.read_text()
    assert "  summary_values:\n    type: control.join\n    inputs: {options: [$first.text, $second.text]}\n" in text
    assert "values: $summary_values.values        # the variadic idiom" in text
    assert "# gathers both branches, Haystack style\n  summary:" in text
    assert "warning" not in cli("validate", str(flow)).err
    assert cli("run", str(flow), "-i", "go=false", "--json").json()["outputs"] == {"summary": "two"}
    assert cli("run", str(flow), "-i", "go=true", "--json").json()["outputs"] == {"summary": "one, two"}
    assert cli("fmt", "--fix", "--check", str(flow)).code == 0  # fixed once
