"""Templates, guards and the calculator run under a budget: nothing is folded at validate time,
results are capped, loops are bounded, and `timeout_s` bounds rendering (the event loop keeps going)."""

from __future__ import annotations

import json
import resource
import time

import pytest

from nodes.calculator import calculator
from studio.errors import TemplateError
from studio.flow import templates
from studio.flow.spec import load_flow_text
from studio.runtime.compiler import compile_flow
from tests.nodes.runner import HEADER, run_flow

GROWTH_LIMIT_KB = 200 * 1024


def _peak_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _template_flow(template: str, timeout: str = "") -> str:
    return f"""
outputs: {{text: $t.text}}
nodes:
  t: {{type: text.template, {timeout} config: {{template: {json.dumps(template)}}}}}
"""


def test_a_huge_constant_is_not_folded_at_validate_time() -> None:
    before, start = _peak_kb(), time.perf_counter()
    compile_flow(load_flow_text(HEADER + _template_flow("{{ 'x' * 700000000 }}")))
    assert time.perf_counter() - start < 5 and _peak_kb() - before < GROWTH_LIMIT_KB


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{ 'x' * 700000000 }}", "`*` would make 700000000 items"),
        ("{{ [0] * 10 ** 8 }}", "`*` would make"),
        ("{{ 10 ** 100000 }}", "`**` result larger than"),
        ("{{ 'x'.ljust(1000000000) }}", "call argument 1000000000"),
        ("{{ 'x' | center(1000000000) }}", "call argument 1000000000"),
        ("{{ '%999999999s' % 'x' }}", "format width"),
        ("{{ '%(a)999999999s' % {'a': 1} }}", "format width"),
        ("{{ '{:{}}'.format('x', 999999999) }}", "call argument 999999999"),
        ("{{ '{:>999999999}'.format(1) }}", "format width"),
        ("{{ ('a' * 100000) | replace('a', 'a' * 100000) }}", "`replace` would make"),
        ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "steps"),
        ("{{ range(10 ** 9) | list }}", "call argument"),
    ],
)
async def test_template_bombs_are_refused_quickly_without_memory(template: str, message: str) -> None:
    before, start = _peak_kb(), time.perf_counter()
    result, store = await run_flow(_template_flow(template))
    assert result.status == "failed" and message in str(result.error), result.error
    assert store.steps(result.run_id)[0].error_kind == "template_error"
    assert time.perf_counter() - start < 30 and _peak_kb() - before < GROWTH_LIMIT_KB


async def test_timeout_s_bounds_rendering() -> None:
    loop_bomb = "{% for i in range(100000) %}{% for j in range(9) %}{{ '' }}{% endfor %}{% endfor %}"
    start = time.perf_counter()
    result, _ = await run_flow(_template_flow(loop_bomb, "timeout_s: 0.3,"))
    elapsed = time.perf_counter() - start
    assert result.status == "failed" and "rendering took longer than 0.3 s" in str(result.error), result.error
    assert elapsed < 5


async def test_a_when_guard_is_budgeted_too() -> None:
    flow = """
outputs: {text: $t.text}
nodes:
  t: {type: text.template, when: "'x' * 900000000", config: {template: hi}}
"""
    before = _peak_kb()
    result, _ = await run_flow(flow)
    assert result.status == "failed" and "`*` would make 900000000 items" in str(result.error)
    assert _peak_kb() - before < GROWTH_LIMIT_KB


def test_ordinary_templates_still_work() -> None:
    text = "{{ 'ab' * 3 }} {{ 2 ** 10 }} {{ -n }} {{ '%05d' % n }} {{ [1] + [2] }} {{ 'a-b' | replace('-', '+') }}"
    assert templates.render(text, {"n": 7}) == "ababab 1024 -7 00007 [1, 2] a+b"
    with pytest.raises(TemplateError):
        templates.render("{{ 'x' * 10 ** 9 }}", {})


@pytest.mark.parametrize(
    ("source", "context"),
    [
        ("Write a headline about {{ topic }}.", {"topic": "tea"}),
        ("{{ request }}", {"request": None}),
        ("a\n{{ b }}\n", {"b": [1, {"x": 2.5}]}),
        ("{{ a }}{{b}} and {{ c }}\n\n", {"a": 1.5, "b": True, "c": "z"}),
        ("plain text\n", {}),
        ("", {}),
    ],
)
def test_a_plain_template_renders_as_jinja_would_without_the_sandbox(source: str, context: dict[str, object]) -> None:
    """Text and bare names only: joined without Jinja2, to the same text."""
    assert templates._plain(source) is not None
    assert templates.render(source, context) == templates._template(source).render(**context)


def test_a_plain_template_keeps_the_size_cap_and_jinjas_errors() -> None:
    with pytest.raises(TemplateError, match="rendered text exceeds"):
        templates.render("{{ a }}{{ a }}", {"a": "x" * 150_000})
    with pytest.raises(TemplateError, match="'missing' is undefined"):
        templates.render("{{ missing }}", {})
    assert templates.render("{{ range(2) | list }}", {}) == "[0, 1]"  # not plain: Jinja2 renders it
    assert templates._plain("{{ x.y }}") is None and templates._plain("{% if x %}y{% endif %}") is None


@pytest.mark.parametrize(
    "expression",
    ["9**99**99", "((10**100)**100)**100", "(2**100)**100", "*".join(["10**99"] * 14)],
)
def test_calculator_chains_are_bounded(expression: str) -> None:
    before, start = _peak_kb(), time.perf_counter()
    with pytest.raises(ValueError, match="larger than"):
        calculator(expression)
    assert time.perf_counter() - start < 1 and _peak_kb() - before < GROWTH_LIMIT_KB


async def test_calculator_bombs_from_model_output_fail_the_node_only() -> None:
    flow = """
inputs: {e: {type: str}}
outputs: {value: $calc.result}
nodes:
  calc: {type: tool.python, inputs: {expression: $inputs.e}, config: {tool: calculator}}
"""
    result, _ = await run_flow(flow, {"e": "((10**100)**100)**100"})
    assert result.status == "failed" and "larger than 4096 bits" in str(result.error)
    ok, _ = await run_flow(flow, {"e": "2**10"})
    assert ok.outputs == {"value": 1024}
