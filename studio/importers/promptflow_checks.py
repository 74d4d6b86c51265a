"""Prompt flow's references (`${node.output}`) and the checks that refuse an invalid flow.dag.yaml
(what Prompt flow itself refuses: a wrong shape, references to nothing, cycles)."""

from __future__ import annotations

import re
from typing import Any

from studio.errors import FlowError
from studio.flow.loader import Document

_REF = re.compile(r"^\$\{([A-Za-z_][\w-]*)\.([\w.-]+)\}$")


def parse_ref(value: Any) -> tuple[str, str] | None:
    """`${head.rest}` as (head, rest); `${flow.x}`, Prompt flow's other spelling of a flow input,
    reads as `${inputs.x}`."""
    if not isinstance(value, str) or not (m := _REF.match(value.strip())):
        return None
    return ("inputs" if m.group(1) == "flow" else m.group(1)), m.group(2)


def refs(value: Any) -> list[str]:
    """Source node names a value refers to (`${node.output...}`)."""
    if (found := parse_ref(value)) and found[0] != "inputs":
        return [found[0]]
    if isinstance(value, dict):
        return [r for v in value.values() for r in refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in refs(v)]
    return []


def deps(node: dict[str, Any]) -> list[str]:
    """Source node names a node reads (its inputs and its `activate.when`)."""
    activate = node.get("activate") or {}
    return refs(node.get("inputs") or {}) + refs(activate.get("when") if isinstance(activate, dict) else None)


def check_shape(doc: Document) -> None:
    """Refuse a document whose sections are not what a flow.dag.yaml holds (so nothing below trips)."""
    data = doc.data
    if not isinstance(data, dict) or not isinstance(data.get("nodes", []), list):
        raise FlowError("not a Prompt flow DAG: expected a mapping with a `nodes:` list", file=doc.file, line=1)
    wanted: list[tuple[tuple[str | int, ...], Any]] = [
        ((key,), data.get(key)) for key in ("inputs", "outputs", "node_variants")
    ]
    for i, node in enumerate(data.get("nodes") or []):
        if not isinstance(node, dict):
            raise FlowError("a node must be a mapping", file=doc.file, line=doc.line_of(("nodes", i)))
        wanted += [(("nodes", i, key), node.get(key)) for key in ("inputs", "source", "activate")]
    for path, value in wanted:
        if value is not None and not isinstance(value, dict):
            where = ".".join(str(p) for p in path)
            raise FlowError(f"`{where}` must be a mapping", file=doc.file, line=doc.line_of(path))


def check_graph(doc: Document, nodes: list[dict[str, Any]], data: dict[str, Any]) -> None:
    """Refuse what Prompt flow itself refuses: unnamed or repeated nodes, references to nothing, cycles."""
    names: dict[str, int] = {}
    for i, node in enumerate(nodes):
        name = node.get("name")
        if not isinstance(name, str) or not name:
            raise FlowError("a node without a `name`", file=doc.file, line=doc.line_of(("nodes", i)))
        if name in names:
            raise FlowError(f"two nodes named {name!r}", file=doc.file, line=doc.line_of(("nodes", i)))
        names[name] = i
    inputs = data.get("inputs") or {}
    for i, node in enumerate(nodes):
        for value in _input_refs(node):
            head, rest = value
            if (head == "inputs" and rest.split(".")[0] not in inputs) or (head != "inputs" and head not in names):
                where = doc.line_of(("nodes", i, "inputs"))
                raise FlowError(
                    f"node {node['name']!r} refers to ${{{head}.{rest}}}, which does not exist",
                    file=doc.file,
                    line=where,
                )
    outputs = data.get("outputs") or {}
    for name, spec in outputs.items():
        ref = spec.get("reference") if isinstance(spec, dict) else spec
        for head in refs(ref):
            if head not in names:
                raise FlowError(
                    f"output {name!r} refers to {ref}, which does not exist",
                    file=doc.file,
                    line=doc.line_of(("outputs", name)),
                )
    _check_cycles(doc, nodes, names)


def _input_refs(node: dict[str, Any]) -> list[tuple[str, str]]:
    activate = node.get("activate") or {}
    values = [*(node.get("inputs") or {}).values(), activate.get("when") if isinstance(activate, dict) else None]
    found = []
    for value in values:
        if found_ref := parse_ref(value):
            found.append(found_ref)
    return found


def _check_cycles(doc: Document, nodes: list[dict[str, Any]], names: dict[str, int]) -> None:
    needs = {n["name"]: deps(n) for n in nodes}
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            loop = [*path[path.index(name) :], name]
            raise FlowError("a cycle: " + " -> ".join(loop), file=doc.file, line=doc.line_of(("nodes", names[name])))
        state[name] = 1
        for dep in needs[name]:
            visit(dep, [*path, name])
        state[name] = 2

    for name in needs:
        visit(name, [])
