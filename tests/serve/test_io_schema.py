"""One input/output contract per flow: the server's listing and OpenAPI, the MCP tool and the
exported package all publish what `studio.runtime.io_schema.flow_schema` gives, defaults included."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from studio.export.writer import export_flow
from studio.flow.spec import load_flow
from studio.runtime.compiler import compile_flow
from studio.runtime.io_schema import flow_schema
from studio.serve.catalog import ServedFlow
from studio.serve.mcp_server import FlowTool
from studio.serve.schemas import request_schema, response_schema

FLOW = """\
flowstudio: 1
name: io-contract-probe
inputs:
  text: {type: str, description: "The text"}
  count: {type: int, default: 3}
  maybe: {type: str, default: null}
  tags: {type: "list[str]", default: ["a"]}
  loose: {type: any, default: null}
outputs:
  echoed: $up.text
  guarded: $quiet.text
  fixed: a literal
  passed: $inputs.maybe
nodes:
  up: {type: text.template, inputs: {t: $inputs.text, n: $inputs.count}, config: {template: "{{ t }} x{{ n }}"}}
  quiet: {type: text.template, when: inputs.count > 5, inputs: {t: $inputs.text}, config: {template: "{{ t }}"}}
"""
NULLABLE_STR = [{"type": "string"}, {"type": "null"}]


def _nullable(schema: dict[str, Any]) -> bool:
    """Whether the schema accepts null: a nullable `anyOf`, or no type at all (`any`)."""
    return {"type": "null"} in schema.get("anyOf", []) or not {"type", "anyOf"} & set(schema)


def _takes_null(annotation: Any) -> bool:
    try:
        TypeAdapter(annotation).validate_python(None)
    except ValidationError:
        return False
    return True


def test_serve_mcp_and_export_publish_one_contract(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "probe.yaml"
    path.write_text(FLOW, encoding="utf-8")
    plan = compile_flow(load_flow(path))
    contract = flow_schema(plan)
    assert contract.inputs["properties"]["count"] == {"type": "integer", "default": 3}
    assert contract.inputs["properties"]["maybe"] == {"anyOf": NULLABLE_STR, "default": None}
    assert contract.inputs["properties"]["loose"] == {"default": None}
    assert contract.inputs["required"] == ["text"]
    assert contract.outputs["properties"]["guarded"] == {"anyOf": NULLABLE_STR}
    assert contract.outputs["properties"]["passed"] == {"anyOf": NULLABLE_STR}

    listing = ServedFlow("probe", path, "hash", plan).listing()
    assert (listing["inputs"], listing["outputs"]) == (contract.inputs, contract.outputs)
    tool = FlowTool(path, plan).schema()
    assert (tool.input_schema, tool.output_schema) == (contract.inputs, contract.outputs)
    assert request_schema(plan)["properties"]["inputs"] == contract.inputs
    assert response_schema(plan)["properties"]["outputs"]["anyOf"][0] == contract.outputs

    export_flow(path, tmp_path / "out")
    monkeypatch.syspath_prepend(str(tmp_path / "out"))
    package = importlib.import_module("io_contract_probe")
    try:
        inputs, outputs = package.Inputs.model_fields, package.Outputs.model_fields
        assert [n for n, f in inputs.items() if f.is_required()] == contract.inputs["required"]
        for name, prop in contract.inputs["properties"].items():
            if "default" in prop:
                assert inputs[name].get_default(call_default_factory=True) == prop["default"], name
            assert _nullable(prop) == _takes_null(inputs[name].annotation), name
        for name, prop in contract.outputs["properties"].items():
            assert _nullable(prop) == _takes_null(outputs[name].annotation), name
    finally:
        sys.modules.pop("io_contract_probe", None)
    assert set(outputs) == set(contract.outputs["properties"])
