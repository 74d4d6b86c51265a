"""The JSON Schema of flow files, generated from the pydantic models."""

from __future__ import annotations

from typing import Any

from studio.flow.spec import FlowSpec
from studio.runtime import registry

SCHEMA_ID = "https://flowstudio.dev/schema/flow-1.json"


def flow_schema() -> dict[str, Any]:
    """FlowSpec's schema, with the registered node types listed and, per type, its config schema
    and input ports (`if type is K then ...`), so an editor can complete a node's config."""
    from studio.runtime.nodedoc import node_rules

    schema = FlowSpec.model_json_schema()
    node = schema["$defs"]["NodeSpec"]
    node["properties"]["type"]["examples"] = registry.keys()
    node["allOf"] = node_rules(schema["$defs"])
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}
