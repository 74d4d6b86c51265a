"""Importers: shapes met in the public example flows (Prompt flow's examples/flows, community Dify
DSL exports) import and validate, or are refused with the reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml
from jinja2.sandbox import SandboxedEnvironment

from bench.importers import found_items, measure
from studio.importers import import_dify, import_promptflow, write_import
from studio.runtime.runner import run_flow

SHAPES = Path(__file__).parent / "fixtures" / "shapes"
TOOLS = Path(__file__).parent / "fixtures" / "tools"


def _run(flow: Path, inputs: dict[str, object], tmp_path: Path) -> dict[str, object]:
    result = run_flow(flow, inputs, db=tmp_path / "db.sqlite")
    assert result.status == "succeeded", result.error
    return result.outputs


def test_a_flow_prefix_reference_reads_the_flow_input(tmp_path: Path) -> None:
    write_import(import_promptflow(SHAPES / "flow-prefix"), tmp_path / "flow.yaml")
    assert _run(tmp_path / "flow.yaml", {"question": "why"}, tmp_path) == {"answer": "WHY!"}


def test_a_file_from_additional_includes_is_read_and_noted(tmp_path: Path) -> None:
    imported = import_promptflow(SHAPES / "includes" / "flow")
    assert imported.report.nodes[0].notes == ["ask.jinja2 read from additional_includes (../shared/ask.jinja2)"]
    write_import(imported, tmp_path / "flow.yaml")
    assert _run(tmp_path / "flow.yaml", {"question": "why"}, tmp_path) == {"answer": "WHY?"}


def test_an_include_outside_the_folder_above_the_flow_is_still_refused(tmp_path: Path) -> None:
    flow = tmp_path / "a" / "flow"
    flow.mkdir(parents=True)
    (tmp_path / "secret.jinja2").write_text("secret")
    dag = (SHAPES / "includes" / "flow" / "flow.dag.yaml").read_text()
    (flow / "flow.dag.yaml").write_text(dag.replace("../shared/ask.jinja2", "../../ask.jinja2"))
    (tmp_path / "ask.jinja2").write_text("{{ q }}")
    node = import_promptflow(flow).report.nodes[0]
    assert node.status == "not converted" and "outside the flow folder" in node.notes[-1]


def test_a_dify_sticky_note_is_no_node_and_main_is_chosen_among_helpers(tmp_path: Path) -> None:
    imported = import_dify(SHAPES / "note-and-helpers.yml")
    assert [n.kind for n in imported.report.nodes] == ["start", "code", "end"]
    assert imported.report.complete, imported.report.lines()
    write_import(imported, tmp_path / "flow.yaml")
    assert _run(tmp_path / "flow.yaml", {"text": "a b c"}, tmp_path) == {"count": 3}


def test_system_variables_through_the_start_node_and_inside_an_iteration(tmp_path: Path) -> None:
    write_import(import_dify(SHAPES / "chat-sys.yml"), tmp_path / "flow.yaml")
    body = yaml.safe_load((tmp_path / "parts" / "chat-sys-each.yaml").read_text())
    assert body["inputs"].keys() == {"item", "sys_query"}
    outputs = _run(tmp_path / "flow.yaml", {"query": "x y"}, tmp_path)
    assert outputs == {"answer": ["x of x y", "y of x y"]}


def test_jinja_syntax_in_dify_plain_text_stays_literal(tmp_path: Path) -> None:
    imported = import_dify(SHAPES / "literal-braces.yml")
    write_import(imported, tmp_path / "flow.yaml")
    config = imported.flow["nodes"]["explain"]["config"]
    render = SandboxedEnvironment().from_string
    assert render(config["system"]).render() == "Answer in the form <input>{{subject}}</input>"
    assert render(config["prompt"]).render(topic="tea") == "Explain tea"


def test_an_iteration_body_reading_the_index_gets_the_items_numbered() -> None:
    imported = import_dify(SHAPES / "iteration-index.yml")
    node = imported.report.nodes[1]
    assert node.status == "converted" and imported.report.complete
    assert node.notes == ["its body reads the index: the items are numbered first ({item, index} each)"]


def test_the_bench_finds_flows_and_apps_under_a_source_folder_and_counts_them() -> None:
    found = found_items(SHAPES)
    assert [p.name for p in found["promptflow"]] == ["flow-prefix", "flow"]
    assert len(found["dify"]) == 5
    dify = measure("dify", found["dify"])
    assert (dify["flows"], dify["import_and_validate"]) == (5, 4)
    assert dify["failure_reasons"] == [
        ("tool node not converted: tool duckduckgo/ddgo_search: no HTTP or Python equivalent is built in", 1)
    ]
    out = subprocess.run(
        [sys.executable, "-m", "bench.importers", "--source", str(SHAPES)], capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith("promptflow  2/2 flows import and validate (100%)")


def test_dify_built_in_tools_with_a_public_api_become_requests_and_the_rest_are_refused(tmp_path: Path) -> None:
    imported = import_dify(TOOLS / "builtin-tools.yml")
    status = {n.source: n.status for n in imported.report.nodes if n.kind == "tool"}
    assert status == {
        "Read the page": "approximated",
        "Wikipedia": "approximated",
        "Now": "approximated",
        "Pay": "not converted",
    }
    nodes, render = imported.flow["nodes"], SandboxedEnvironment().from_string
    jina, wiki = nodes["read_the_page"], nodes["wikipedia"]
    assert jina["type"] == wiki["type"] == "tool.http"
    url = nodes[jina["inputs"]["url"].removeprefix("$").split(".")[0]]
    assert url["inputs"] == {"page": "$inputs.page"}
    assert render(url["config"]["template"]).render(page="a b") == "https://r.jina.ai/https://example.org/docs/a b"
    search = nodes[wiki["inputs"]["url"].removeprefix("$").split(".")[0]]
    assert search["inputs"] == {"query": "$inputs.topic"}
    assert render(search["config"]["template"]).render(query="tea & cake") == (
        "https://fr.wikipedia.org/w/rest.php/v1/search/page?limit=3&q=tea%20%26%20cake"
    )
    assert imported.flow["outputs"]["found"] == "$wikipedia.data"


def test_the_current_time_tool_runs_in_the_sandbox(tmp_path: Path) -> None:
    source = (TOOLS / "builtin-tools.yml").read_text()
    app = tmp_path / "app.yml"
    app.write_text(source.replace("tool_name: create_order", "tool_name: current_time"))
    write_import(import_dify(app), tmp_path / "flow.yaml")
    flow = yaml.safe_load((tmp_path / "flow.yaml").read_text())
    flow["nodes"] = {k: v for k, v in flow["nodes"].items() if k in ("now", "now_text")}
    flow["outputs"] = {"year": "$now_text.value"}
    (tmp_path / "flow.yaml").write_text(yaml.safe_dump(flow))
    outputs = _run(tmp_path / "flow.yaml", {"page": "p", "topic": "t"}, tmp_path)
    assert str(outputs["year"]).isdigit() and len(str(outputs["year"])) == 4
