"""tool.python and the tool table: entry-point tools, a flow's `tools:` section, signature typing."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodes.tool_python import PythonTool
from studio.errors import CompileError, NodeError, SpecError
from studio.flow.spec import load_flow, load_flow_text
from studio.node import NodeContext, PortType, TemplateInputs
from studio.runtime.compiler import compile_flow
from studio.runtime.llm import NoModel
from studio.tools import ALLOW_ENV, resolve_tools
from tests.nodes.runner import HEADER, run_flow

CALC = """
inputs: {e: {type: str}}
outputs: {value: $calc.result}
nodes:
  calc: {type: tool.python, inputs: {expression: $inputs.e}, config: {tool: calculator}}
"""

TOOLS_MODULE = '''
import helper

def add(a: int, b: int = 1) -> int:
    """Add two whole numbers."""
    return a + b + helper.ZERO

async def shout(text: str) -> dict[str, str]:
    return {"text": text.upper()}

def boom() -> None:
    raise RuntimeError("kaput")

def keep_last(new=None, old: str = "kept"):
    return {"new": new, "old": old}
'''


@pytest.fixture
def flow_dir(tmp_path: Path) -> Path:
    (tmp_path / "mytools.py").write_text(TOOLS_MODULE)
    (tmp_path / "helper.py").write_text("ZERO = 0\n")
    return tmp_path


def _flow(directory: Path, tools: str) -> Path:
    path = directory / "flow.yaml"
    path.write_text(HEADER + f"tools: {tools}\nnodes:\n  t: {{type: text.template, config: {{template: x}}}}\n")
    return path


@pytest.mark.parametrize(("expression", "value"), [("2 * (3 + 4)", 14), ("7 / 2", 3.5)])
async def test_entry_point_tool(expression: str, value: float) -> None:
    result, _ = await run_flow(CALC, {"e": expression})
    assert result.outputs == {"value": value}, result.error


async def test_tool_errors_fail_the_node() -> None:
    result, store = await run_flow(CALC, {"e": "__import__('os')"})
    assert result.status == "failed" and "tool 'calculator' failed: ValueError" in str(result.error)
    assert store.steps(result.run_id)[0].error_kind == "tool_error"


def test_ports_come_from_the_signature_of_an_installed_tool() -> None:
    node = PythonTool(PythonTool.Config(tool="calculator"))
    assert node.input_ports() == {"expression": PortType("str")}
    assert node.required_inputs() == {"expression"}
    with pytest.raises(CompileError, match="'expression' has no input"):
        compile_flow(load_flow_text(HEADER + "nodes:\n  c: {type: tool.python, config: {tool: calculator}}\n"))


async def test_flow_tools_are_imported_from_the_flow_directory(flow_dir: Path) -> None:
    tools = resolve_tools(load_flow(_flow(flow_dir, "{add: mytools:add, shout: mytools:shout, boom: mytools:boom}")))
    ctx = NodeContext(run_id="r", node_id="t", flow_dir=flow_dir, llm=NoModel(), tools=tools)
    add = PythonTool(PythonTool.Config(tool="add"))
    assert (await add.run(TemplateInputs(a="2"), ctx)).result == 3  # typed: "2" becomes 2
    assert (await add.run(TemplateInputs(a=2, b=5), ctx)).result == 7
    shout = PythonTool(PythonTool.Config(tool="shout"))
    assert (await shout.run(TemplateInputs(text="hi"), ctx)).result == {"text": "HI"}
    with pytest.raises(NodeError, match="tool 'add': c: Extra inputs are not permitted"):
        await add.run(TemplateInputs(a=1, c=2), ctx)
    with pytest.raises(NodeError, match="tool 'add': a: Field required"):
        await add.run(TemplateInputs(), ctx)
    with pytest.raises(NodeError, match="tool 'boom' failed: RuntimeError: kaput"):
        await PythonTool(PythonTool.Config(tool="boom")).run(TemplateInputs(), ctx)
    with pytest.raises(NodeError, match="unknown tool 'nope'"):
        await PythonTool(PythonTool.Config(tool="nope")).run(TemplateInputs(), ctx)


async def test_flow_tools_reach_nodes_through_the_engine(flow_dir: Path) -> None:
    text = "tools: {add: mytools:add}\noutputs: {n: $t.result}\nnodes:\n  t: {type: tool.python, inputs: {a: 40, b: 2}, config: {tool: add}}\n"
    result, _ = await run_flow(text, path=flow_dir / "flow.yaml")
    assert result.outputs == {"n": 42}, result.error


KEEP_LAST = """
tools: {keep_last: mytools:keep_last}
inputs: {go: {type: bool}}
outputs: {kept: $keep.result}
nodes:
  fresh: {type: text.template, when: inputs.go, config: {template: fresh}}
  stale: {type: text.template, when: "false", config: {template: stale}}
  keep: {type: tool.python, inputs: {new: $fresh.text, old: $stale.text}, config: {tool: keep_last}}
"""


@pytest.mark.parametrize(
    ("go", "kept"), [(True, {"new": "fresh", "old": "kept"}), (False, {"new": None, "old": "kept"})]
)
async def test_a_parameter_with_a_default_is_an_optional_input(flow_dir: Path, go: bool, kept: dict[str, str]) -> None:
    """A wire from a skipped node leaves the parameter at its default instead of skipping the node."""
    result, store = await run_flow(KEEP_LAST, {"go": go}, path=flow_dir / "flow.yaml")
    assert result.outputs == {"kept": kept}, result.error
    assert {s.node: s.status for s in store.steps(result.run_id)}["keep"] == "succeeded"


def test_an_installed_tool_s_defaulted_parameter_is_an_optional_port() -> None:
    from nodes.tool_python import ports_of

    def tool(a: int, b: int = 1) -> int:
        return a + b

    assert ports_of(tool) == {"a": PortType("int"), "b": PortType("int", optional=True)}


def test_modules_outside_the_flow_directory_need_the_allowlist(flow_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flow = load_flow(_flow(flow_dir, "{dumps: json:dumps}"))
    with pytest.raises(CompileError, match=r"not a file in .* and not allowlisted") as err:
        resolve_tools(flow)
    assert err.value.field == "tools.dumps" and err.value.line == 3
    assert resolve_tools(flow, allow=["json"])["dumps"]([1]) == "[1]"
    monkeypatch.setenv(ALLOW_ENV, "os,json")
    assert "dumps" in resolve_tools(flow)


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ("{add: mytools.add}", "write module:function"),
        ("{2add: 'mytools:add'}", "must be a Python identifier"),
        ("{add: 'mytools:add; rm'}", "write module:function"),
    ],
)
def test_tools_section_is_checked_on_load(flow_dir: Path, tools: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        load_flow(_flow(flow_dir, tools))


def test_missing_function_names_the_tool(flow_dir: Path) -> None:
    with pytest.raises(
        CompileError, match="tool 'x' \\(mytools:nothing\\): module 'mytools' has no function 'nothing'"
    ):
        resolve_tools(load_flow(_flow(flow_dir, "{x: mytools:nothing}")))
