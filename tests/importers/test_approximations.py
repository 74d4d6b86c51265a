"""Importers: what has no native equivalent is approximated with a note (aggregation, package tools, agents)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlite_utils

from nodes.retrieve_fts import index_directory
from studio.importers import import_dify, import_promptflow, write_import
from studio.runtime.runner import run_flow
from studio.secrets import mask

FIXTURES = Path(__file__).parent / "fixtures"


def _scripted(folder: Path, reply: str) -> dict[str, str]:
    (folder / "reply.yaml").write_text(f"- {{reply: {json.dumps(reply)}}}\n", encoding="utf-8")
    return {"default": "scripted/reply.yaml"}


def test_an_aggregation_node_becomes_an_aggregate_flow_run_over_the_batch_rows(tmp_path: Path) -> None:
    imported = import_promptflow(FIXTURES / "promptflow" / "eval-aggregation")
    entry = imported.report.nodes[1]
    assert entry.status == "approximated" and "eval-aggregation-aggregate.yaml" in entry.notes[0]
    assert "flowstudio batch" in entry.notes[0] and entry.line == 22
    written = write_import(imported, tmp_path / "flow.yaml")
    assert tmp_path / "eval-aggregation-aggregate.yaml" in written
    rows = []
    for truth, prediction in [("APP", "app"), ("APP", "web"), ("WEB", "web")]:
        inputs = {"groundtruth": truth, "prediction": prediction}
        result = run_flow(tmp_path / "flow.yaml", inputs, db=tmp_path / "db.sqlite")
        assert result.status == "succeeded", result.error
        rows.append({"index": len(rows), "inputs": inputs, "outputs": result.outputs})
    total = run_flow(tmp_path / "eval-aggregation-aggregate.yaml", {"rows": rows}, db=tmp_path / "db.sqlite")
    assert total.status == "succeeded", total.error
    assert total.outputs["calculate_accuracy_metrics"] == {"accuracy": 0.67, "labels": 2}
    assert total.outputs["calculate_accuracy"] == ["Correct", "Incorrect", "Correct"]


def test_package_tools_are_approximated_by_built_ins_and_run_on_the_scripted_model(tmp_path: Path) -> None:
    imported = import_promptflow(FIXTURES / "promptflow" / "package-tools")
    statuses = {n.source: n.status for n in imported.report.nodes}
    assert statuses == {**{n: "approximated" for n in statuses}, "similarity": "converted"}
    kinds = {node_id: spec["type"] for node_id, spec in imported.flow["nodes"].items()}
    assert kinds["embed_question"] == "code.python" and kinds["lookup"] == "retrieve.fts"
    assert kinds["detect_language"] == kinds["describe"] == "llm.generate" and kinds["compress"] == "text.template"
    assert "connection" not in imported.flow["nodes"]["describe"]["inputs"]
    write_import(imported, tmp_path / "flow.yaml")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "faq.md").write_text("# Refunds\nRefunds take five days.\n")
    index_directory(sqlite_utils.Database(tmp_path / "index.db"), "documents", tmp_path / "docs")
    models = {**_scripted(tmp_path, "English (en)"), "gpt_4v": "scripted/reply.yaml"}
    inputs = {"question": "how long do refunds take", "answer": "refunds take five days"}
    result = run_flow(tmp_path / "flow.yaml", inputs, model_overrides=models, db=tmp_path / "db.sqlite")
    assert result.status == "succeeded", result.error
    assert 0 < result.outputs["similarity"] < 1 and result.outputs["language"] == "English (en)"
    assert result.outputs["compressed"] == inputs["answer"] and result.outputs["passages"][0]["title"] == "Refunds"


def test_a_dify_agent_becomes_llm_agent_with_the_tools_that_exist_else_llm_generate(tmp_path: Path) -> None:
    imported = import_dify(FIXTURES / "dify" / "agent.yml")
    solver, travel = imported.flow["nodes"]["solver"], imported.flow["nodes"]["travel"]
    assert solver["type"] == "llm.agent" and solver["config"]["tools"] == ["calculator"]
    assert solver["config"]["max_turns"] == 4 and travel["type"] == "llm.generate"
    assert "information_schema" in travel["config"]["system"] and travel["inputs"] == {"solver_text": "$solver.answer"}
    notes = " ".join(note for n in imported.report.nodes for note in n.notes)
    assert "duckduckgo/ddgo_search" in notes and "MCP server" in notes and "memory" in notes
    write_import(imported, tmp_path / "flow.yaml")
    (tmp_path / "script.yaml").write_text(
        "- {match: 'Action:', replies: ['Action: calculator\\nInput: 6 * 7', 'Answer: 42']}\n"
        "- {match: 'The result was 42', reply: 'Where to?'}\n"
    )
    models = {"default": "scripted/script.yaml"}
    result = run_flow(
        tmp_path / "flow.yaml", {"query": "6 times 7?"}, model_overrides=models, db=tmp_path / "db.sqlite"
    )
    assert result.status == "succeeded", result.error
    assert result.outputs == {"answer": "Where to?"}


def test_a_connection_parameter_is_read_from_the_environment_by_a_tool_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    imported = import_promptflow(FIXTURES / "promptflow" / "connection-tool")
    entry = imported.report.nodes[0]
    assert entry.status == "approximated" and imported.flow["nodes"]["call_api"]["type"] == "tool.python"
    assert "set MY_CUSTOM_CONNECTION_API_KEY, MY_CUSTOM_CONNECTION_ENDPOINT" in entry.notes[0]
    written = write_import(imported, tmp_path / "flow.yaml")
    assert tmp_path / "connection_tool_call_api.py" in written
    monkeypatch.setenv("MY_CUSTOM_CONNECTION_ENDPOINT", "https://api.example.com")
    monkeypatch.setenv("MY_CUSTOM_CONNECTION_API_KEY", "key-0123456789")
    result = run_flow(tmp_path / "flow.yaml", {"text": "hello"}, db=tmp_path / "db.sqlite")
    assert result.status == "succeeded", result.error
    assert result.outputs == {"result": "hello via https://api.example.com with key-0123456789"}
    assert mask(result.outputs) == {"result": "hello via *** with ***"}  # read through secrets.reveal: masked when kept


def test_dify_list_operator_filters_sorts_and_cuts_and_the_document_text_is_an_input(tmp_path: Path) -> None:
    imported = import_dify(FIXTURES / "dify" / "lists.yml")
    path = imported.flow["nodes"]["documents"]["config"]["path"]
    assert path == 'reverse(sort_by(@[?contains(`["document"]`, type)], &size)) | [:2]'
    notes = " ".join(note for n in imported.report.nodes for note in n.notes)
    assert "input `read_text`" in notes and "files are a list input" in notes
    write_import(imported, tmp_path / "flow.yaml")
    files = [{"type": "document", "size": 5, "name": "a"}, {"type": "image", "size": 9, "name": "b"},
             {"type": "document", "size": 7, "name": "c"}, {"type": "document", "size": 1, "name": "d"}]  # fmt: skip
    result = run_flow(tmp_path / "flow.yaml", {"files": files, "read_text": "hello"}, db=tmp_path / "db.sqlite")
    assert result.status == "succeeded", result.error
    assert result.outputs == {"biggest": files[2], "documents": [files[2], files[0]], "text": "hello"}


def test_a_dify_iteration_body_reading_the_index_gets_numbered_items(tmp_path: Path) -> None:
    imported = import_dify(FIXTURES / "dify" / "iterate-index.yml")
    assert imported.report.complete
    write_import(imported, tmp_path / "each.yaml")
    result = run_flow(tmp_path / "each.yaml", {"words": "a b", "suffix": "!"}, db=tmp_path / "db.sqlite")
    assert result.status == "succeeded", result.error
    assert result.outputs == {"shouted": ["0:A!", "1:B!"]}


def _eval_folder(tmp_path: Path, second_type: str) -> Path:
    folder = tmp_path / "two-steps"
    folder.mkdir(parents=True)
    (folder / "count.py").write_text(
        "from promptflow import tool\n\n\n@tool\ndef count(xs: list) -> int:\n    return len(xs)\n"
    )
    (folder / "double.py").write_text(
        "from promptflow import tool\n\n\n@tool\ndef double(n: int) -> int:\n    return 2 * n\n"
    )
    (folder / "flow.dag.yaml").write_text(
        "inputs:\n  x:\n    type: string\noutputs: {}\nnodes:\n"
        f"- name: total\n  type: {second_type}\n  source:\n    type: code\n    path: count.py\n"
        "  inputs:\n    xs: ${inputs.x}\n  aggregation: true\n"
        "- name: twice\n  type: python\n  source:\n    type: code\n    path: double.py\n"
        "  inputs:\n    n: ${total.output}\n  aggregation: true\n"
    )
    return folder


def test_an_aggregation_node_reads_another_or_is_refused_when_that_one_is(tmp_path: Path) -> None:
    imported = import_promptflow(_eval_folder(tmp_path / "a", "python"))
    write_import(imported, tmp_path / "flow.yaml")
    rows = [{"inputs": {"x": "a"}, "outputs": {}}, {"inputs": {"x": "b"}, "outputs": {}}]
    total = run_flow(tmp_path / "two-steps-aggregate.yaml", {"rows": rows}, db=tmp_path / "db.sqlite")
    assert total.status == "succeeded", total.error
    assert (total.outputs["total"], total.outputs["twice"]) == (2, 4)
    refused = import_promptflow(_eval_folder(tmp_path / "b", "llm")).report.nodes
    assert [n.status for n in refused] == ["not converted", "not converted"]
    assert "reads the aggregation node 'total'" in refused[1].notes[0]


def test_the_cli_writes_the_aggregate_flow_and_the_tool_module_and_says_how_to_run_them(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from studio.cli import main

    runner = CliRunner()
    aggregation = runner.invoke(
        main,
        ["import", "promptflow", str(FIXTURES / "promptflow" / "eval-aggregation"), "--out", str(tmp_path / "e.yaml")],
    )
    assert aggregation.exit_code == 0, aggregation.output
    assert "wrote " in aggregation.output and "eval-aggregation-aggregate.yaml" in aggregation.output
    assert "jq -s '{rows: .}' rows.jsonl > rows.json" in aggregation.output
    tool = runner.invoke(
        main,
        ["import", "promptflow", str(FIXTURES / "promptflow" / "connection-tool"), "--out", str(tmp_path / "c.yaml")],
    )
    assert tool.exit_code == 0 and "MY_CUSTOM_CONNECTION_API_KEY" in tool.output
    assert (tmp_path / "connection_tool_call_api.py").is_file()
