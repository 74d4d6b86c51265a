"""A semantic diff of two flows: nodes added, removed, renamed and changed field by field (long
text as a unified diff), wires, models, inputs, outputs, and the other files a snapshot holds."""

from __future__ import annotations

import difflib
from typing import Any

from studio.flow.refs import parse_value, refs_in
from studio.flow.spec import Flow

TEXT_FIELDS = ("prompt", "template", "instructions", "system")
"""Config fields always shown as a text diff (any value with a line break is too)."""


def diff_flows(a: Flow, b: Flow) -> dict[str, Any]:
    """What changed from `a` to `b`, as JSON."""
    nodes_a, nodes_b = _nodes(a), _nodes(b)
    renamed = _renamed(nodes_a, nodes_b)
    return {
        "nodes": {
            "added": sorted(set(nodes_b) - set(nodes_a) - {new for _, new in renamed}),
            "removed": sorted(set(nodes_a) - set(nodes_b) - {old for old, _ in renamed}),
            "renamed": [{"from": old, "to": new} for old, new in renamed],
            "changed": [
                {"node": node, **change}
                for node in sorted(set(nodes_a) & set(nodes_b))
                for change in _changes(nodes_a[node], nodes_b[node])
            ]
            + [
                {"node": new, **change}
                for old, new in renamed
                for change in _changes(nodes_a[old], nodes_b[new])
                if change["field"].startswith("inputs.")
            ],
        },
        "wires": _added_removed(_wires(a), _wires(b)),
        "models": _section(_dump(a)["models"], _dump(b)["models"]),
        "inputs": _section(_dump(a)["inputs"], _dump(b)["inputs"]),
        "outputs": _section(_dump(a)["outputs"], _dump(b)["outputs"]),
    }


def diff_files(a: dict[str, str], b: dict[str, str]) -> dict[str, list[str]]:
    """Files (path → content hash) added, removed and changed between two snapshots."""
    return {
        "added": sorted(set(b) - set(a)),
        "removed": sorted(set(a) - set(b)),
        "changed": sorted(path for path in set(a) & set(b) if a[path] != b[path]),
    }


def is_empty(diff: dict[str, Any]) -> bool:
    """Whether a diff found nothing."""
    return not any(value for section in diff.values() if isinstance(section, dict) for value in section.values())


def _dump(flow: Flow) -> dict[str, Any]:
    return flow.spec.model_dump(mode="json", exclude_defaults=True)


def _nodes(flow: Flow) -> dict[str, dict[str, Any]]:
    return {node: dict(spec) for node, spec in _dump(flow).get("nodes", {}).items()}


def _renamed(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """Nodes gone from `a` whose type and config a new node of `b` has: the same node, a new id."""
    pairs: list[tuple[str, str]] = []
    added = [node for node in b if node not in a]
    for old in (node for node in a if node not in b):
        key = (a[old].get("type"), a[old].get("config"))
        match = next((new for new in added if (b[new].get("type"), b[new].get("config")) == key), None)
        if match is not None:
            pairs.append((old, match))
            added.remove(match)
    return pairs


def _changes(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """Each field that differs, one level into `config` and `inputs`."""
    changes: list[dict[str, Any]] = []
    for key in sorted(set(a) | set(b)):
        before, after = a.get(key), b.get(key)
        if before == after:
            continue
        if key in ("config", "inputs") and isinstance(before or {}, dict) and isinstance(after or {}, dict):
            changes += [
                {**change, "field": f"{key}.{change['field']}"} for change in _changes(before or {}, after or {})
            ]
        else:
            changes.append(_change(key, before, after))
    return changes


def _change(field: str, before: Any, after: Any) -> dict[str, Any]:
    change = {"field": field, "before": before, "after": after}
    texts = isinstance(before, str | None) and isinstance(after, str | None)
    if texts and (field in TEXT_FIELDS or "\n" in f"{before or ''}{after or ''}"):
        change["text_diff"] = text_diff(before or "", after or "", field)
    return change


def text_diff(before: str, after: str, name: str) -> str:
    """A unified diff of two texts."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{name}", f"b/{name}"
    )
    return "".join(line if line.endswith("\n") else f"{line}\n" for line in lines)


def _wires(flow: Flow) -> set[str]:
    """Every wire as `$source.port -> node.input`."""
    wires = set()
    for node, spec in flow.spec.nodes.items():
        for name, value in spec.inputs.items():
            wires |= {f"{ref} -> {node}.{name}" for ref in refs_in(parse_value(value))}
    for name, value in flow.spec.outputs.items():
        wires |= {f"{ref} -> outputs.{name}" for ref in refs_in(parse_value(value))}
    return wires


def _added_removed(a: set[str], b: set[str]) -> dict[str, list[str]]:
    return {"added": sorted(b - a), "removed": sorted(a - b)}


def _section(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Names added and removed, and each changed name's fields."""
    changed = [
        {"name": name, **change}
        for name in sorted(set(a) & set(b))
        for change in (_changes(a[name], b[name]) if isinstance(a[name], dict) and isinstance(b[name], dict)
                       else [_change("value", a[name], b[name])] if a[name] != b[name] else [])
    ]  # fmt: skip
    return {**_added_removed(set(a), set(b)), "changed": changed}


def format_diff(diff: dict[str, Any]) -> list[str]:
    """The diff as lines for people."""
    lines: list[str] = []
    nodes = diff["nodes"]
    lines += [f"+ node {node}" for node in nodes["added"]] + [f"- node {node}" for node in nodes["removed"]]
    lines += [f"~ node {pair['from']} renamed to {pair['to']}" for pair in nodes["renamed"]]
    for change in nodes["changed"]:
        lines.append(f"~ node {change['node']}: {change['field']}" + _values(change))
        if "text_diff" in change:
            lines += ["    " + line for line in change["text_diff"].splitlines()]
    lines += [f"+ wire {w}" for w in diff["wires"]["added"]] + [f"- wire {w}" for w in diff["wires"]["removed"]]
    for section in ("models", "inputs", "outputs"):
        part = diff[section]
        what = section.rstrip("s") if section != "inputs" else "input"
        lines += [f"+ {what} {name}" for name in part["added"]] + [f"- {what} {name}" for name in part["removed"]]
        lines += [f"~ {what} {c['name']}: {c['field']}{_values(c)}" for c in part["changed"]]
    files = diff.get("files", {})
    for mark, key in (("+", "added"), ("-", "removed"), ("~", "changed")):
        lines += [f"{mark} file {path}" for path in files.get(key, [])]
    return lines or ["no differences"]


def _values(change: dict[str, Any]) -> str:
    if "text_diff" in change:
        return ""
    return f": {change['before']!r} -> {change['after']!r}"
