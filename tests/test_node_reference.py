"""`flowstudio schema` carries each node type's config and ports; docs/nodes.md is generated and current."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import jsonschema
import yaml

from studio.runtime import registry
from studio.runtime.nodedoc import DOC, REGENERATE, render
from tests.conftest import CLI, FLOWS, ROOT


def _validator(cli: CLI) -> jsonschema.Draft202012Validator:
    result = cli("schema")
    assert result.code == 0, result.err
    schema = result.json()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_schema_knows_every_node_types_config_and_input_ports(cli: CLI) -> None:
    validator = _validator(cli)
    rules = validator.schema["$defs"]["NodeSpec"]["allOf"]
    assert sorted(rule["if"]["properties"]["type"]["const"] for rule in rules) == registry.keys()
    for path in [*FLOWS.glob("*.yaml"), *(FLOWS / "parts").glob("*.yaml")]:
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text(encoding="utf-8")))]
        assert errors == [], (path, errors)

    flow = yaml.safe_load((FLOWS / "ticket-triage.yaml").read_text(encoding="utf-8"))
    misspelt = copy.deepcopy(flow)
    config = misspelt["nodes"]["classify"]["config"]
    config["lables"] = config.pop("labels")
    messages = " ".join(e.message for e in validator.iter_errors(misspelt))
    assert "'lables' was unexpected" in messages and "'labels' is a required property" in messages
    wrong_type = copy.deepcopy(flow)
    wrong_type["nodes"]["classify"]["config"]["labels"] = "billing"
    assert list(validator.iter_errors(wrong_type))
    bad_port = copy.deepcopy(flow)
    bad_port["nodes"]["classify"]["inputs"] = {"txt": "$inputs.ticket"}
    assert any("txt" in e.message for e in validator.iter_errors(bad_port))


def test_node_reference_is_current() -> None:
    current = (ROOT / DOC).read_text(encoding="utf-8")
    assert current == render(ROOT), f"{DOC} is out of date: run `{REGENERATE}` and commit it"


def test_node_reference_documents_every_type_with_fields_ports_and_example() -> None:
    text = render(ROOT)
    sections = text.split("\n## ")[1:]
    assert [s.split("`")[1] for s in sections] == registry.keys()
    for section in sections:
        for part in ("**Config**", "**Inputs**", "**Outputs**", "**Example**", "```yaml"):
            assert part in section, (section[:40], part)
        example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
        (node,) = yaml.safe_load(example).values()
        assert node["type"] == section.split("`")[1]
    classify = next(s for s in sections if s.startswith("`llm.classify`"))
    assert "| `labels` |" in classify and "| `text` | `str` |" in classify and "| `label` | `str` |" in classify


def test_check_mode_says_how_to_regenerate(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / DOC).write_text("stale\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "studio.runtime.nodedoc", "--check"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 1 and REGENERATE in done.stderr
