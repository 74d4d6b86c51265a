"""Every registered node type described from its own classes: config schema, ports, an example.

Feeds `flowstudio schema` (one `if type is K then config is K's Config` rule per type) and writes
the node reference, docs/nodes.md:

    python -m studio.runtime.nodedoc            # rewrite docs/nodes.md from the registry
    python -m studio.runtime.nodedoc --check    # exit 1 when docs/nodes.md is not current
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import itertools
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from studio.flow.schema import flow_schema
from studio.node import Node, SubFlowNode, TemplateInputs
from studio.runtime import registry
from studio.types import from_annotation

DOC = Path("docs/nodes.md")
REGENERATE = "python -m studio.runtime.nodedoc"
EXAMPLE_DIRS = ("flows", "flows/parts")
"""Where the reference looks for a real use of each node type to show (relative to the repo)."""


@dataclass(frozen=True)
class Port:
    """One named input or output of a node type."""

    name: str
    type: str
    description: str


@dataclass(frozen=True)
class NodeDoc:
    """What the schema and the reference say about one node type."""

    key: str
    summary: str
    config: type[BaseModel]
    inputs: list[Port]
    outputs: list[Port]
    open_inputs: str | None
    """How inputs are named when the type has no fixed input ports, else None."""
    open_outputs: str | None
    """How outputs are named when the type has more than its fixed output ports, else None."""
    uses_model: bool


def describe(key: str) -> NodeDoc:
    """The description of the node type registered under `key`."""
    node_type = registry.get(key)
    if node_type is None:
        raise KeyError(key)
    open_inputs = None
    if issubclass(node_type.Inputs, TemplateInputs):
        open_inputs = "one input per variable its templates read"
    elif issubclass(node_type, SubFlowNode):
        open_inputs = "the sub-flow's inputs"
    elif node_type.Inputs.model_config.get("extra") == "allow":
        open_inputs = "any name (see the description)"
    open_outputs = None
    if issubclass(node_type, SubFlowNode):
        open_outputs = "the sub-flow's outputs"
    elif node_type.Outputs.model_config.get("extra") == "allow":
        open_outputs = "named by the config"
    inputs = [] if issubclass(node_type.Inputs, TemplateInputs) else _ports(node_type.Inputs)
    return NodeDoc(
        key=key,
        summary=_summary(node_type),
        config=node_type.Config,
        inputs=inputs,
        outputs=_ports(node_type.Outputs),
        open_inputs=open_inputs,
        open_outputs=open_outputs,
        uses_model=node_type.uses_model,
    )


def _summary(node_type: type[Node]) -> str:
    module = sys.modules.get(node_type.__module__)
    first = (inspect.getdoc(module) or "").split("\n\n")[0] if module else ""
    text = first.split(": ", 1)[1] if first.startswith("`") and ": " in first else first
    own = inspect.getdoc(node_type) or ""
    parts = [" ".join(text.split()), " ".join(own.split()) if own != inspect.getdoc(Node) else ""]
    text = " ".join(p for p in parts if p)
    return text[:1].upper() + text[1:]


def _ports(model: type[BaseModel]) -> list[Port]:
    notes = attribute_docstrings(model)
    return [
        Port(name, str(from_annotation(info.annotation)), " ".join((info.description or notes.get(name, "")).split()))
        for name, info in model.model_fields.items()
    ]


@functools.cache
def attribute_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """The docstring under each field of a class, for models without `use_attribute_docstrings`."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(model)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    notes = {}
    for field, after in itertools.pairwise(body):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            notes[field.target.id] = after.value.value
    return notes


# The JSON Schema


def node_rules(defs: dict[str, Any]) -> list[dict[str, Any]]:
    """`if: {type: K} then: {config: K's Config schema}` for every node type; adds their $defs."""
    rules = []
    keys = registry.keys()
    for key in keys:
        doc = describe(key)
        prefix = f"{key}."
        schema = doc.config.model_json_schema(ref_template=f"#/$defs/{prefix}{{model}}")
        for name, definition in schema.pop("$defs", {}).items():
            defs[prefix + name] = definition
        then: dict[str, Any] = {"properties": {"config": schema}}
        if not doc.open_inputs:
            names = [p.name for p in doc.inputs]
            then["properties"]["inputs"] = {"propertyNames": {"enum": names}}
        if not doc.uses_model:
            then["not"] = {"required": ["model"]}
        rules.append(
            {
                "if": {"properties": {"type": {"const": key}}, "required": ["type"]},
                "then": then,
                "description": _rule_text(doc),
            }
        )
    return rules


def _rule_text(doc: NodeDoc) -> str:
    inputs = doc.open_inputs or ", ".join(f"{p.name} ({p.type})" for p in doc.inputs) or "none"
    outputs = ", ".join(f"{p.name} ({p.type})" for p in doc.outputs)
    if doc.open_outputs:
        outputs = f"{outputs}, plus {doc.open_outputs}" if outputs else doc.open_outputs
    return f"{doc.key}: {doc.summary} Inputs: {inputs}. Outputs: {outputs or 'none'}."


# The reference


def render(root: Path) -> str:
    """docs/nodes.md for the node types registered now."""
    lines = [
        "# Node reference",
        "",
        f"Generated from the node registry by `{REGENERATE}`; do not edit by hand.",
        "Each node type: what it does, its `config` fields, its input and output ports (wire them with",
        "`$node.port` and `$inputs.name`), and an example. `flowstudio schema` carries the same config",
        "schemas, so an editor can complete a node's `config`.",
        "",
    ]
    keys = registry.keys()
    lines += [f"- [`{key}`](#{_anchor(key)})" for key in keys]
    for key in keys:
        lines += ["", *_section(describe(key), root)]
    return "\n".join(lines) + "\n"


def _anchor(key: str) -> str:
    return key.replace(".", "")


def _section(doc: NodeDoc, root: Path) -> list[str]:
    lines = [f"## `{doc.key}`", "", doc.summary, ""]
    if doc.uses_model:
        lines += ["Calls a model: `model:` names the alias (`default` when omitted).", ""]
    lines += ["**Config**", "", *_config_table(doc.config), "", "**Inputs**", ""]
    lines += _port_table(doc.inputs, doc.open_inputs)
    lines += ["", "**Outputs**", "", *_port_table(doc.outputs, doc.open_outputs), "", "**Example**", ""]
    lines += ["```yaml", *_example(doc, root).rstrip("\n").splitlines(), "```"]
    return lines


def _config_table(config: type[BaseModel]) -> list[str]:
    if not config.model_fields:
        return ["No config fields."]
    rows = ["| field | type | default | description |", "|---|---|---|---|"]
    for name, info in config.model_fields.items():
        key = info.alias or name
        default = "required" if info.is_required() else f"`{_yaml_value(info.get_default(call_default_factory=True))}`"
        rows.append(f"| `{key}` | {_type_text(info.annotation)} | {default} | {_cell(info.description)} |")
    return rows


def _port_table(ports: list[Port], open_names: str | None) -> list[str]:
    rows = []
    if ports:
        rows += ["| port | type | description |", "|---|---|---|"]
        rows += [f"| `{p.name}` | `{p.type}` | {_cell(p.description)} |" for p in ports]
    if open_names:
        rows += ["", f"Also: {open_names}."] if ports else [f"Named by use: {open_names}."]
    return rows or ["None."]


def _type_text(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    text = text or str(annotation).replace("typing.", "")
    for module in ("nodes.", "studio."):
        while module in text:
            start = text.index(module)
            end = text.rfind(".", start, text.find("]", start) if "]" in text[start:] else len(text)) + 1
            text = text[:start] + text[end:]
    return f"`{text}`".replace("|", "\\|")


def _cell(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


def _yaml_value(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return yaml.safe_dump(value, default_flow_style=True, width=1000).strip().removesuffix("...").strip()


def _example(doc: NodeDoc, root: Path) -> str:
    found = _used_in(doc.key, root)
    if found:
        node_id, spec, source = found
        body = yaml.safe_dump({node_id: spec}, sort_keys=False, allow_unicode=True, width=100)
        return f"# from {source}\n" + body
    skeleton: dict[str, Any] = {"type": doc.key}
    if doc.inputs:
        skeleton["inputs"] = {p.name: f"$inputs.{p.name}" for p in doc.inputs if p.type != "any | null"}
    required = {
        info.alias or name: _placeholder(info.annotation)
        for name, info in doc.config.model_fields.items()
        if info.is_required()
    }
    if required:
        skeleton["config"] = required
    node_id = doc.key.split(".")[-1]
    return yaml.safe_dump({node_id: skeleton}, sort_keys=False, width=100)


def _placeholder(annotation: Any) -> Any:
    port = from_annotation(annotation)
    return {"int": 1, "float": 1.0, "bool": True, "list": ["..."], "dict": {}}.get(port.name, "...")


def _used_in(key: str, root: Path) -> tuple[str, dict[str, Any], str] | None:
    """The first node of type `key` in the example flows, with the file it is in."""
    for folder in EXAMPLE_DIRS:
        for path in sorted((root / folder).glob("*.yaml")):
            if path.name.endswith(".layout.yaml"):
                continue
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            nodes = data.get("nodes") if isinstance(data, dict) else None
            for node_id, spec in (nodes or {}).items():
                if isinstance(spec, dict) and spec.get("type") == key:
                    return node_id, copy.deepcopy(spec), path.relative_to(root).as_posix()
    return None


def main(argv: list[str] | None = None) -> int:
    """Write docs/nodes.md (run from the repository root), or with --check say whether it is current."""
    args = sys.argv[1:] if argv is None else argv
    root = Path.cwd()
    text = render(root)
    target = root / DOC
    if "--check" in args:
        if target.is_file() and target.read_text(encoding="utf-8") == text:
            return 0
        print(f"{DOC} is not current; regenerate it with: {REGENERATE}", file=sys.stderr)
        return 1
    target.write_text(text, encoding="utf-8")
    print(f"wrote {DOC}: {len(registry.keys())} node types")
    return 0


if __name__ == "__main__":
    sys.exit(main())


def full_schema() -> dict[str, Any]:
    """The JSON Schema `flowstudio schema` prints: every registered node type, with its config and ports."""
    return flow_schema(registry.keys(), node_rules)
