"""The JSON Schema of flow files, generated from the pydantic models."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from studio.flow.spec import FlowSpec

SCHEMA_ID = "https://flowstudio.dev/schema/flow-1.json"


def flow_schema(
    node_types: Iterable[str] = (), rules: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None
) -> dict[str, Any]:
    """FlowSpec's schema, with the node types listed for editors and, when `rules` is given (see
    `studio.runtime.nodedoc.node_rules`), per type its config schema and input ports
    (`if type is K then ...`), so an editor can complete a node's config."""
    schema = FlowSpec.model_json_schema()
    node = schema["$defs"]["NodeSpec"]
    node["properties"]["type"]["examples"] = list(node_types)
    if rules is not None:
        node["allOf"] = rules(schema["$defs"])
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}
