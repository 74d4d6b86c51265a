"""The JSON Schema of flow files, generated from the pydantic models."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from studio.flow.spec import FlowSpec

SCHEMA_ID = "https://flowstudio.dev/schema/flow-1.json"


def flow_schema(node_types: Iterable[str] = ()) -> dict[str, Any]:
    """FlowSpec's schema, with the registered node types (`studio.runtime.registry.keys()`) listed for editors."""
    schema = FlowSpec.model_json_schema()
    node_type = schema["$defs"]["NodeSpec"]["properties"]["type"]
    node_type["examples"] = list(node_types)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}
