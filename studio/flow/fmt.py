"""`flowstudio fmt`: canonical key order and indentation, comments and styles kept.

Writing goes through ruamel.yaml's round-trip mode, which keeps comments, quoting and flow
style, so formatting a reviewed file changes only what is out of order.
"""

from __future__ import annotations

import io
from typing import Any

TOP_ORDER = ["flowstudio", "name", "description", "inputs", "outputs", "models", "tools", "durability", "nodes"]
NODE_ORDER = ["type", "description", "model", "when", "after", "inputs", "config", "retry", "timeout_s", "cache"]
MODEL_ORDER = ["model", "temperature", "max_tokens", "stop", "api_key", "api_base", "fallbacks", "retries"]


def round_trip_yaml() -> Any:
    """ruamel.yaml in round-trip mode with the project's layout (2-space maps, 4/2 sequences)."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    yaml.preserve_quotes = True
    return yaml


def _reorder(mapping: Any, order: list[str]) -> None:
    rank = {key: i for i, key in enumerate(order)}
    keys = sorted(mapping.keys(), key=lambda k: (rank.get(k, len(order)), list(mapping.keys()).index(k)))
    for key in keys:
        mapping.move_to_end(key)


def _normalise(document: Any) -> None:
    _reorder(document, TOP_ORDER)
    for node in (document.get("nodes") or {}).values():
        if hasattr(node, "move_to_end"):
            _reorder(node, NODE_ORDER)
    for model in (document.get("models") or {}).values():
        if hasattr(model, "move_to_end"):
            _reorder(model, MODEL_ORDER)


def format_text(text: str) -> str:
    """The canonical form of a flow file's text (call only on a validated flow)."""
    yaml = round_trip_yaml()
    document = yaml.load(text)
    _normalise(document)
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()


def yaml_value(value: Any) -> Any:
    """A value ruamel writes readably: block-style mappings, multi-line strings as literal blocks."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import LiteralScalarString

    if isinstance(value, str) and "\n" in value.strip("\n"):
        return LiteralScalarString(value)
    if isinstance(value, dict):
        mapping = CommentedMap()
        for key, item in value.items():
            mapping[key] = yaml_value(item)
        return mapping
    if isinstance(value, list):
        return CommentedSeq([yaml_value(item) for item in value])
    return value


def dump(document: Any) -> str:
    """The text of a round-trip document, in the project's layout."""
    out = io.StringIO()
    round_trip_yaml().dump(document, out)
    return out.getvalue()


def insert_joins(text: str, lists: list[tuple[str, str]], join_type: str, output: str) -> tuple[str, list[str]]:
    """Rewrite each (node, input) list input that gathers branches into a `join_type` node of its
    own, listed just before the node, whose `options` is the list as written (style and comments
    kept) and whose `output` the input now reads. Returns the text and the new nodes' ids."""
    yaml = round_trip_yaml()
    document = yaml.load(text)
    nodes = document["nodes"]
    added = []
    for node_id, port in lists:
        join_id = _free_id(f"{node_id}_{port}", nodes)
        inputs = nodes[node_id]["inputs"]
        join = yaml_value({"type": join_type})
        join["inputs"] = yaml_value({})
        options = inputs[port]
        if getattr(options, "ca", None) is not None:
            options.ca.comment = None  # the line's end comment stays with the node that had the list
        join["inputs"]["options"] = options
        if getattr(options, "fa", None) is not None and options.fa.flow_style():
            join["inputs"].fa.set_flow_style()  # a one-line list stays on one line
        nodes.insert(list(nodes).index(node_id), join_id, join)
        inputs[port] = f"${join_id}.{output}"
        added.append(join_id)
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue(), added


def _free_id(wanted: str, taken: Any) -> str:
    found, n = wanted, 2
    while found in taken:
        found, n = f"{wanted}_{n}", n + 1
    return found
