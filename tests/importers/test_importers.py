"""Importers: Prompt flow folders and Dify DSL files become flows that validate and run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.errors import FlowError
from studio.flow.spec import load_flow
from studio.importers import import_dify, import_promptflow, write_import
from studio.runtime.compiler import compile_flow
from studio.runtime.runner import run_flow

FIXTURES = Path(__file__).parent / "fixtures"
PROMPTFLOW = sorted(p for p in (FIXTURES / "promptflow").iterdir() if p.is_dir())
DIFY = sorted((FIXTURES / "dify").glob("*.yml"))
NOT_CONVERTIBLE = {"custom-tool", "unsupported-tool"}


def _script(folder: Path, reply: str) -> str:
    (folder / "reply.yaml").write_text(f"- {{reply: {json.dumps(reply)}}}\n", encoding="utf-8")
    return "default=scripted/reply.yaml"


@pytest.mark.parametrize("source", PROMPTFLOW + DIFY, ids=lambda p: p.stem)
def test_every_fixture_imports_and_validates_or_says_which_node_cannot(source: Path, tmp_path: Path) -> None:
    importer = import_dify if source.suffix == ".yml" else import_promptflow
    imported = importer(source)
    name = source.stem if source.suffix == ".yml" else source.name
    if name in NOT_CONVERTIBLE:
        assert not imported.report.complete and imported.report.nodes[-1 if name != "unsupported-tool" else 1].line
        placeholders = importer(source, allow_placeholders=True)
        write_import(placeholders, tmp_path / "flow.yaml")
        assert "PLACEHOLDER" in (tmp_path / "flow.yaml").read_text()
        return
    assert imported.report.complete, imported.report.lines()
    write_import(imported, tmp_path / "flow.yaml")
    compile_flow(load_flow(tmp_path / "flow.yaml"))


def test_llm_then_python_gives_the_python_logic_applied_to_the_scripted_reply(tmp_path: Path) -> None:
    out = tmp_path / "basic.yaml"
    write_import(import_promptflow(FIXTURES / "promptflow" / "basic"), out)
    text = out.read_text()
    assert "@tool" not in text and "promptflow" not in text.split("nodes:")[1]
    result = run_flow(out, {"text": "Python"}, model_overrides=dict([_script(tmp_path, "why so serious").split("=")]),
                      db=tmp_path / "db.sqlite", options=None)  # fmt: skip
    assert result.status == "succeeded", result.error
    words = len(["Write", "a", "simple", "Python", "program", "that", "displays", "the", "greeting", "message."])
    assert result.outputs == {"output_prompt": f"WHY SO SERIOUS ({words} words)"}


def test_activate_becomes_when_and_a_bypassed_input_reads_the_default(tmp_path: Path) -> None:
    out = tmp_path / "cond.yaml"
    write_import(import_promptflow(FIXTURES / "promptflow" / "conditional-if-else"), out)
    flow = load_flow(out).spec
    assert flow.nodes["llm_result"].when == "content_safety_check.result == true"
    override = dict([_script(tmp_path, "Prompt flow is a tool.").split("=")])
    safe = run_flow(out, {"query": "What is it?"}, model_overrides=override, db=tmp_path / "db.sqlite")
    unsafe = run_flow(out, {"query": "an attack"}, model_overrides=override, db=tmp_path / "db.sqlite")
    assert safe.outputs == {"answer": "Prompt flow is a tool."}
    assert unsafe.outputs == {"answer": "I'm not familiar with your query: an attack."}


def test_variants_keep_the_default_and_field_references_become_extracts(tmp_path: Path) -> None:
    imported = import_promptflow(FIXTURES / "promptflow" / "web-classification")
    nodes = imported.flow["nodes"]
    assert nodes["summarize_text_content"]["config"]["prompt"].startswith("Please summarize")
    assert imported.flow["outputs"]["category"].endswith(".value")
    assert imported.flow["models"]["default"]["model"] == "azure/text-davinci-003"
    summary = next(n for n in imported.report.nodes if n.source == "summarize_text_content")
    assert "variant_1 (the default) taken; not imported: variant_0" in summary.notes[0]
    assert nodes["fetch_text_content_from_url"]["type"] == "code.python"
    fetch = next(n for n in imported.report.nodes if n.source == "fetch_text_content_from_url")
    assert fetch.status == "approximated" and "no network" in fetch.notes[0]
    assert "\n\n\n\n" not in nodes["convert_to_dict"]["config"]["code"]


def test_field_names_that_are_not_identifiers_are_quoted_in_the_extract_path() -> None:
    from studio.importers.build import jmes

    assert jmes(["a", "my-field", "b"]) == 'a."my-field".b'


@pytest.mark.parametrize("name", ["pf-cycle", "pf-missing-ref"])
def test_invalid_prompt_flows_are_refused_with_one_line(name: str) -> None:
    with pytest.raises(FlowError) as err:
        import_promptflow(FIXTURES / "invalid" / name)
    assert ("cycle" in str(err.value)) or ("does not exist" in str(err.value))
    assert err.value.line is not None


def test_broken_yaml_is_refused() -> None:
    with pytest.raises(FlowError):
        import_dify(FIXTURES / "invalid" / "broken.yml")


def test_dify_branches_run_on_the_scripted_model_and_positions_go_to_the_layout(tmp_path: Path) -> None:
    out = tmp_path / "triage.yaml"
    written = write_import(import_dify(FIXTURES / "dify" / "support-triage.yml"), out)
    assert tmp_path / "triage.layout.yaml" in written
    assert "classify: {x: 532.0, y: 448.0}" in (tmp_path / "triage.layout.yaml").read_text()
    override = dict([_script(tmp_path, "other").split("=")])
    result = run_flow(out, {"question": "hello there"}, model_overrides=override, db=tmp_path / "db.sqlite")
    assert result.status == "succeeded", result.error
    assert result.outputs == {"result": "LONG: THANKS, WE WILL LOOK AT: HELLO THERE", "label": "other"}


def test_dify_iteration_maps_a_sub_flow_written_beside_the_flow(tmp_path: Path) -> None:
    out = tmp_path / "each.yaml"
    write_import(import_dify(FIXTURES / "dify" / "iterate.yml"), out)
    assert (tmp_path / "parts" / "iterate-each-word.yaml").exists()
    result = run_flow(out, {"words": "a b", "suffix": "!"}, db=tmp_path / "db.sqlite")
    assert result.outputs == {"shouted": ["A!", "B!"]}


def test_cli_exit_codes(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from studio.cli import main

    runner = CliRunner()
    bad = runner.invoke(
        main, ["import", "promptflow", str(FIXTURES / "promptflow" / "custom-tool"), "--out", str(tmp_path / "x.yaml")]
    )
    assert bad.exit_code == 2 and "not converted" in bad.output and not (tmp_path / "x.yaml").exists()
    cycle = runner.invoke(main, ["import", "promptflow", str(FIXTURES / "invalid" / "pf-cycle")])
    assert cycle.exit_code == 2 and "a cycle: " in cycle.output
    ok = runner.invoke(
        main, ["import", "dify", str(FIXTURES / "dify" / "extract-and-call.yml"), "--out", str(tmp_path / "o.yaml")]
    )
    assert ok.exit_code == 0 and "4 nodes: 4 converted" in ok.output
    data = tmp_path / "data.jsonl"
    data.write_text('{"link": "https://a.example", "answer": "App"}\n', encoding="utf-8")
    run = runner.invoke(
        main,
        [
            "import",
            "promptflow-run",
            str(data),
            "--column-mapping",
            "url=${data.link}",
            "--out",
            str(tmp_path / "d.jsonl"),
        ],
    )
    assert run.exit_code == 0, run.output
    assert json.loads((tmp_path / "d.jsonl").read_text()) == {"answer": "App", "url": "https://a.example"}


def test_dify_answer_template_and_assigner_run_on_the_chat_query(tmp_path: Path) -> None:
    out = tmp_path / "chat.yaml"
    imported = import_dify(FIXTURES / "dify" / "chat-remember.yml")
    assert [n.status for n in imported.report.nodes].count("approximated") == 1  # the assigner
    assert imported.layout["answer"] == (1260.0, 160.0) and imported.layout["$outputs"][0] > 1260.0
    write_import(imported, out)
    result = run_flow(out, {"query": "Cats are great"}, db=tmp_path / "db.sqlite")
    assert result.outputs == {"answer": "We are talking about cats. You said: Cats are great"}


def test_a_python_node_that_returns_a_list_reads_the_scripted_reply(tmp_path: Path) -> None:
    out = tmp_path / "ner.yaml"
    imported = import_promptflow(FIXTURES / "promptflow" / "named-entity-recognition")
    assert imported.flow["nodes"]["ner_llm"]["config"]["system"].startswith("Your task is to find entities")
    write_import(imported, out)
    override = dict([_script(tmp_path, 'data scientist, "finance manager".').split("=")])
    result = run_flow(out, {}, model_overrides=override, db=tmp_path / "db.sqlite")
    assert result.outputs == {"entities": ["data scientist", "finance manager"]}


def test_a_dify_reference_to_no_node_is_refused_with_its_line(tmp_path: Path) -> None:
    text = (FIXTURES / "dify" / "support-triage.yml").read_text().replace("{{#1711528914102.question#}}", "{{#999.x#}}")
    (tmp_path / "app.yml").write_text(text)
    with pytest.raises(FlowError) as err:
        import_dify(tmp_path / "app.yml")
    assert "999.x, which is not a node" in err.value.message and err.value.line == 39  # the node's `- id:` line


def test_an_existing_file_is_replaced_only_with_force(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from studio.cli import main

    out = tmp_path / "mine.yaml"
    out.write_text("my own flow\n")
    args = ["import", "dify", str(FIXTURES / "dify" / "iterate.yml"), "--out", str(out)]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and "already exists" in refused.output and out.read_text() == "my own flow\n"
    assert not (tmp_path / "parts").exists()
    forced = CliRunner().invoke(main, [*args, "--force"])
    assert forced.exit_code == 0 and out.read_text().startswith("# Imported from Dify")


@pytest.mark.parametrize(
    ("reply", "expected"), [("Order_Search", "Your order ships tomorrow."), ("product_info", "It is waterproof.")]
)
def test_activate_on_a_string_routes_like_a_switch(reply: str, expected: str, tmp_path: Path) -> None:
    out = tmp_path / "switch.yaml"
    imported = import_promptflow(FIXTURES / "promptflow" / "switch")
    assert imported.flow["nodes"]["order_search"]["when"] == 'class_check.result == "order_search"'
    write_import(imported, out)
    override = dict([_script(tmp_path, reply).split("=")])
    result = run_flow(out, {"query": "where is my parcel"}, model_overrides=override, db=tmp_path / "db.sqlite")
    assert result.outputs == {"response": expected}


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("inputs: [a, b]\nnodes: []\n", "`inputs` must be a mapping"),
        ("nodes:\n- name: a\n  type: python\n  inputs: [x]\n", "`nodes.0.inputs` must be a mapping"),
        ("nodes:\n- just a string\n", "a node must be a mapping"),
    ],
)
def test_a_dag_of_the_wrong_shape_is_refused_in_one_line(text: str, where: str, tmp_path: Path) -> None:
    (tmp_path / "flow.dag.yaml").write_text(text)
    with pytest.raises(FlowError) as err:
        import_promptflow(tmp_path)
    assert where in err.value.message and err.value.line is not None


def test_a_dify_node_of_another_shape_is_reported_not_converted(tmp_path: Path) -> None:
    text = (FIXTURES / "dify" / "extract-and-call.yml").read_text()
    (tmp_path / "app.yml").write_text(
        text.replace("- {name: order_id, type: string, description: The order number, required: true}", "- order_id")
    )
    report = import_dify(tmp_path / "app.yml").report
    api = next(n for n in report.nodes if n.source == "Extract order")
    assert api.status == "not converted" and "not in the shape Dify writes" in api.notes[-1]


def test_a_dify_edge_to_no_node_is_refused_with_its_line(tmp_path: Path) -> None:
    text = (FIXTURES / "dify" / "iterate.yml").read_text().replace("target: e,", "target: nowhere,")
    (tmp_path / "app.yml").write_text(text)
    with pytest.raises(FlowError) as err:
        import_dify(tmp_path / "app.yml")
    assert "target is not a node" in err.value.message and err.value.line == 9
