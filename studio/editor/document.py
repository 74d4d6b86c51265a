"""A flow file under edit: canvas gestures become edits of its round-trip YAML document.

Every method changes the document the smallest way it can: a new wire is one key in a
node's `inputs`, a prompt edit replaces that one value. The text is dumped again only after
an edit, so a flow that was opened and not edited keeps its exact bytes.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from studio.editor.layout import INPUTS, OUTPUTS
from studio.editor.patch import carry_over
from studio.editor.ports import NodePorts, flow_input_type, instantiate, node_ports, refusal, source_type
from studio.errors import FlowError
from studio.flow import templates
from studio.flow.fmt import NODE_ORDER, TOP_ORDER, dump, round_trip_yaml, yaml_value
from studio.flow.loader import loads
from studio.flow.refs import FLOW_INPUTS, Ref, parse_value, refs_in
from studio.flow.spec import NODE_ID
from studio.runtime import registry
from studio.types import ANY, PortType

ADD_PORT = "+"
"""The handle that creates a new flow input, flow output or template variable."""
DEFAULT_MODELS = {"default": {"model": "local/smollm2", "temperature": 0, "max_tokens": 60}}


def starter(node_type: str) -> dict[str, Any]:
    """Config a node gets when it is added from the palette: its type's `Node.starter`, the
    smallest one that compiles (empty for an unknown type or one whose defaults compile)."""
    found = registry.get(node_type)
    return copy.deepcopy(dict(found.starter)) if found is not None else {}


def new_flow_text(name: str, description: str = "") -> str:
    """The text of an empty flow (the embedded model as its default alias)."""
    return (
        f"flowstudio: 1\nname: {name}\n"
        + (f"description: {description}\n" if description else "")
        + "models:\n  default: {model: local/smollm2, temperature: 0, max_tokens: 60}\nnodes: {}\n"
    )


def _insert_ordered(mapping: Any, key: str, value: Any, order: list[str]) -> None:
    """Set `key`, placing a new key where the canonical order puts it."""
    if key in mapping:
        mapping[key] = value
        return
    rank = {k: i for i, k in enumerate(order)}
    position = sum(1 for k in mapping if rank.get(k, len(order)) <= rank.get(key, len(order)))
    mapping.insert(position, key, value)


def _unique(name: str, taken: Any) -> str:
    if name not in taken:
        return name
    number = 2
    while f"{name}_{number}" in taken:
        number += 1
    return f"{name}_{number}"


_PARSER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flow-parse")


def _parse(text: str) -> tuple[Any, str]:
    """ruamel's round-trip document of `text`, and its dump (`text` itself when the text is canonical)."""
    document = round_trip_yaml().load(text)
    return document, dump(document)


NODES_LINE = "nodes:\n"
SPLICE_REFUSED = ("#", "&", "*")
"""A block holding one of these may carry a comment, an anchor or an alias: it is never spliced."""


def _node_blocks(lines: list[str]) -> tuple[dict[str, tuple[int, int]], int] | None:
    """In a canonical dump's lines: each node's block (first line, end) in a block-style `nodes:`
    section, and where that section ends; None when there is no such section."""
    try:
        start = lines.index(NODES_LINE)
    except ValueError:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:1] not in (" ", "\n")), len(lines))
    keys = [i for i in range(start + 1, end) if lines[i].startswith("  ") and lines[i][2:3] not in (" ", "#", "\n")]
    blocks = {}
    for first, following in zip(keys, [*keys[1:], end], strict=True):
        blocks[lines[first][2:].split(":", 1)[0]] = (first, following)
    return blocks, end


def _node_text(node_id: str, node: Any) -> str | None:
    """One node's block as the whole document's dump writes it (under `nodes:`)."""
    from ruamel.yaml.comments import CommentedMap

    wrapper, nodes = CommentedMap(), CommentedMap()
    nodes[node_id] = node
    wrapper["nodes"] = nodes
    text = dump(wrapper)
    return text[len(NODES_LINE) :] if text.startswith(NODES_LINE) else None


def splice_node(dumped: str, document: Any, node_id: str) -> str | None:
    """`dumped` (the canonical dump of `document` before an edit of node `node_id` alone) with that
    node's block written again, or appended when it is the document's new last node: what dumping
    the whole edited document gives, at the cost of one node. None when it cannot be done exactly
    (then the whole document is dumped)."""
    nodes = document.get("nodes")
    lines = dumped.splitlines(keepends=True)
    found = _node_blocks(lines)
    if found is None or not isinstance(nodes, dict) or node_id not in nodes or not dumped.endswith("\n"):
        return None
    blocks, end = found
    if node_id in blocks:
        first, following = blocks[node_id]
    elif list(nodes)[-1] == node_id and len(blocks) == len(nodes) - 1:
        first = following = end
    else:
        return None
    old = "".join(lines[first:following])
    new = _node_text(node_id, nodes[node_id])
    if new is None or any(mark in old or mark in new for mark in SPLICE_REFUSED):
        return None
    return "".join(lines[:first]) + new + "".join(lines[following:])


def _mapping_or_empty(value: Any) -> Any:
    """`value` when it is a mapping, else an empty one (a half-written file has odd shapes)."""
    return value if isinstance(value, dict) else {}


def _styled_like(old: Any, new: Any) -> Any:
    """`new` written in the quoting style of the value it replaces (a quoted prompt stays quoted)."""
    from ruamel.yaml.scalarstring import ScalarString

    if isinstance(old, ScalarString) and isinstance(new, str):
        return type(old)(new)
    return yaml_value(new)


def _ref_text(node: str, port: str) -> str:
    return f"${FLOW_INPUTS if node == INPUTS else node}.{port}"


class EditableFlow:
    """The flow text and its round-trip document, changed by canvas gestures."""

    def __init__(self, text: str, path: Path, *, data: Any = None) -> None:
        self.path = path
        self._valid_ports: dict[str, NodePorts] = {}
        """Each node's last ports that had no error: a bad value never takes a node's handles away."""
        self.load(text, data=data)

    def load(self, text: str, *, data: Any = None) -> None:
        """Replace the whole document (undo, the YAML tab); raises LoadError on unacceptable YAML.

        `data`: the text as the safe loader read it (its caps on size, aliases and depth), when
        the caller has it already. Reading the graph needs no more; ruamel's round-trip document,
        which keeps comments and layout, is built at the first edit.
        """
        if data is None:
            data = loads(text, file=str(self.path)).data
        if not isinstance(data, dict):
            raise FlowError("a flow file must be a mapping", file=str(self.path), line=1)
        self._data: Any = data
        self._document: Any = None
        self._parsing: Future[tuple[Any, str]] | None = None
        self._dumped: str | None = None
        """The canonical dump of the round-trip document as it stands (kept from edit to edit)."""
        self.text = text
        self._ports: tuple[str, dict[str, NodePorts]] | None = None
        self.canonical: bool | None = None
        """Whether the text is exactly what ruamel writes (found out at the first edit)."""

    def prepare(self) -> None:
        """Parse the round-trip document (and learn whether the text is canonical) in the
        background, so that the first edit does not wait for it; the page calls this once the
        canvas is drawn."""
        if self._document is None and self._parsing is None:
            self._parsing = _PARSER.submit(_parse, self.text)

    @property
    def document(self) -> Any:
        """The round-trip document that edits change (parsed on first use)."""
        if self._document is None:
            document, dumped = self._parsing.result() if self._parsing else _parse(self.text)
            self._document, self._parsing, self._dumped = document, None, dumped
            self.canonical = dumped == self.text if self.canonical is None else self.canonical
        return self._document

    # -- reading -----------------------------------------------------------------------------

    def data(self) -> Any:
        """The document as it stands: the round-trip one once editing began, else the safe loader's."""
        return self._document if self._document is not None else self._data

    def nodes(self) -> Mapping[str, Any]:
        nodes = self.data().get("nodes")
        return nodes if isinstance(nodes, dict) else {}

    def section(self, name: str) -> Mapping[str, Any]:
        value = self.data().get(name)
        return value if isinstance(value, dict) else {}

    def node(self, node_id: str) -> Mapping[str, Any]:
        node = self.nodes().get(node_id)
        return node if isinstance(node, dict) else {}

    def ports(self) -> dict[str, NodePorts]:
        """Every node's ports (from its type and config; a broken config gets errors instead), once per text."""
        if self._ports is not None and self._ports[0] == self.text:
            return self._ports[1]
        found = {}
        for node_id, node in self.nodes().items():
            spec = _mapping_or_empty(node)
            config, inputs = _mapping_or_empty(spec.get("config")), _mapping_or_empty(spec.get("inputs"))
            ports = node_ports(str(spec.get("type", "")), dict(config), dict(inputs), self.path.parent)
            found[str(node_id)] = self._kept(str(node_id), ports)
        self._ports = (self.text, found)
        return found

    def _kept(self, node_id: str, ports: NodePorts) -> NodePorts:
        """`ports`, or (when they are broken) the node's last valid handles carrying the new errors."""
        if not ports.errors:
            self._valid_ports[node_id] = ports
            return ports
        last = self._valid_ports.get(node_id)
        if last is None or ports.outputs:
            return ports
        known = {p.name for p in last.inputs}
        inputs = last.inputs + [p for p in ports.inputs if p.name not in known]
        return NodePorts(inputs, list(last.outputs), list(ports.errors), last.templated)

    def input_types(self) -> dict[str, PortType]:
        return {str(name): flow_input_type(spec) for name, spec in self.section("inputs").items()}

    # -- editing -----------------------------------------------------------------------------

    def _edit(self, change: Any, *, node: str | None = None) -> Any:
        """Run `change()` on the document and refresh the text (carrying it onto a hand-made layout).

        `node`: the change touched that node alone (its block, or a new last node); then only that
        block is written again where that gives the same text as dumping the whole document.
        """
        document = self.document  # parsed, and `canonical` known
        self.ports()  # remember each node's valid handles before the change (cached per text)
        before = self._dumped if self._dumped is not None else dump(document)
        result = change()
        after = splice_node(before, self.document, node) if node is not None else None
        after = after if after is not None else dump(self.document)
        self._dumped = after
        self.text = after if self.canonical else carry_over(self.text, before, after)
        return result

    def _mapping(self, parent: Any, key: str, order: list[str], *, flow_style: bool = False) -> Any:
        from ruamel.yaml.comments import CommentedMap

        if not isinstance(parent.get(key), dict):
            _insert_ordered(parent, key, CommentedMap(), order)
        mapping = parent[key]
        if flow_style:
            mapping.fa.set_flow_style()
        elif not mapping:
            mapping.fa.set_block_style()
        return mapping

    def add_node(self, node_type: str, wanted: str | None = None) -> str:
        """Append a node of `node_type` with its starter config; returns its new id: `wanted` when it
        is a free node id (the canvas names a node it already draws), else one made from the type."""
        taken = self.nodes()
        free = wanted is not None and rename_problem(wanted, taken) is None
        node_id = wanted if free and wanted else _unique(node_type.rsplit(".", 1)[-1].replace("-", "_"), taken)
        spec: dict[str, Any] = {"type": node_type}
        if config := starter(node_type):
            spec["config"] = config

        add_models = not self.section("models") and self._uses_model(node_type)

        def change() -> None:
            if add_models:
                _insert_ordered(self.document, "models", yaml_value(DEFAULT_MODELS), TOP_ORDER)
                self.document["models"]["default"].fa.set_flow_style()
            self._mapping(self.document, "nodes", TOP_ORDER)[node_id] = yaml_value(spec)

        self._edit(change, node=None if add_models else node_id)
        return node_id

    def _uses_model(self, node_type: str) -> bool:
        try:
            return instantiate(node_type, starter(node_type), self.path.parent).uses_model
        except FlowError:
            return False

    def connect(self, source: str, source_port: str, target: str, target_port: str) -> str | None:
        """Wire an output to an input; returns why it was refused, or None when it is done."""
        ports = self.ports()
        problem = self._connect_problem(source, source_port, target, target_port, ports)
        if problem:
            return problem
        if source == INPUTS and source_port == ADD_PORT:
            port = ports[target].input(target_port) if target in ports else None
            source_port = self._add_flow_input(target_port, port.type if port else ANY)
        if target == OUTPUTS:
            name = _unique(source_port, self.section("outputs")) if target_port == ADD_PORT else target_port
            self._edit(
                lambda: self._mapping(self.document, "outputs", TOP_ORDER).__setitem__(
                    name, _ref_text(source, source_port)
                )
            )
            return None
        if target_port == ADD_PORT:
            target_port = self._add_variable(target, source_port)
        self._edit(
            lambda: self._mapping(self.document["nodes"][target], "inputs", NODE_ORDER, flow_style=True).__setitem__(
                target_port, _ref_text(source, source_port)
            ),
            node=target,
        )
        return None

    def _connect_problem(
        self, source: str, source_port: str, target: str, target_port: str, ports: dict[str, NodePorts]
    ) -> str | None:
        what = f"{source}.{source_port} to {target}.{target_port}"
        new_input = source == INPUTS and source_port == ADD_PORT
        if source == target:
            return f"cannot connect {what}: a node cannot feed itself"
        if target == OUTPUTS:
            return f"cannot connect {what}: put a node between the flow's inputs and outputs" if new_input else None
        if target not in ports:
            return f"cannot connect {what}: there is no node {target!r}"
        if target_port == ADD_PORT:
            if new_input:
                return f"cannot connect {what}: drag from a named input, or onto a named port"
            return None if ports[target].templated else f"cannot connect {what}: {target} takes no extra inputs"
        port = ports[target].input(target_port)
        if port is None:
            return f"cannot connect {what}: {target} has no input {target_port!r}"
        if new_input:
            return None  # a new flow input, typed after the port
        stype = source_type(parse_value(_ref_text(source, source_port)), self.input_types(), ports)
        if stype is None:
            return f"cannot connect {what}: {source} has no output {source_port!r}"
        if source != INPUTS and target in self._upstream(source):
            return f"cannot connect {what}: it would make a cycle"
        return refusal(stype, port.type, f"{source}.{source_port} ({stype}) to {target}.{target_port} ({port.type})")

    def _upstream(self, node_id: str) -> set[str]:
        """Every node `node_id` reads from, directly or not."""
        seen, todo = set(), [node_id]
        while todo:
            spec = self.node(todo.pop())
            for ref in refs_in(parse_value(dict(spec.get("inputs") or {}))):
                if ref.node not in seen and ref.node != FLOW_INPUTS:
                    seen.add(ref.node)
                    todo.append(ref.node)
        return seen

    def _add_flow_input(self, name: str, port_type: PortType) -> str:
        name = _unique(name, self.section("inputs"))
        declared = "str" if port_type.name == "any" else str(port_type)

        def change() -> None:
            self._mapping(self.document, "inputs", TOP_ORDER)[name] = yaml_value({"type": declared})
            self.document["inputs"][name].fa.set_flow_style()

        self._edit(change)
        return name

    def _add_variable(self, node_id: str, name: str) -> str:
        """A new template variable at the end of the node's (first) template."""
        node = self.nodes()[node_id]
        name = _unique(name, dict(node.get("inputs") or {}))
        config = dict(node.get("config") or {})
        field = instantiate(str(node["type"]), config, self.path.parent).templates()[0][0]
        source = str(config.get(field, ""))
        self.set_config(node_id, {field: f"{source}\n{{{{ {name} }}}}" if source else f"{{{{ {name} }}}}"})
        return name

    def delete(self, nodes: list[str], edges: list[str]) -> None:
        """Delete nodes (with every wire and output that reads them) and edges."""
        self._edit(lambda: self._delete(set(nodes), edges))

    def _delete(self, gone: set[str], edges: list[str]) -> None:
        for source, target in (e.split("->", 1) for e in edges if "->" in e):
            if "." not in source or "." not in target:
                continue  # not an edge id this editor made
            node, port = target.rsplit(".", 1)
            if node == OUTPUTS:
                self.section("outputs").pop(port, None)  # type: ignore[attr-defined]
            elif isinstance(inputs := self.node(node).get("inputs"), dict) and str(inputs.get(port)) == _ref_text(
                *source.rsplit(".", 1)
            ):
                inputs.pop(port)
        for node_id in gone:
            self.nodes().pop(node_id, None)  # type: ignore[attr-defined]
        for spec in self.nodes().values():
            inputs = _mapping_or_empty(_mapping_or_empty(spec).get("inputs"))
            for name in [n for n, v in inputs.items() if any(r.node in gone for r in refs_in(parse_value(v)))]:
                inputs.pop(name)
            if isinstance(spec, dict) and isinstance(spec.get("after"), list):
                for name in [n for n in spec["after"] if n in gone]:
                    spec["after"].remove(name)
        outputs = self.section("outputs")
        for name in [n for n, v in outputs.items() if any(r.node in gone for r in refs_in(parse_value(v)))]:
            outputs.pop(name)  # type: ignore[attr-defined]

    def duplicate(self, node_id: str) -> str:
        """A copy of a node (type, config, inputs, guard...) under a new id, appended; returns the id."""
        new_id = _unique(node_id, self.nodes())
        self._edit(lambda: self.document["nodes"].__setitem__(new_id, copy.deepcopy(self.document["nodes"][node_id])))
        return new_id

    def rename(self, old: str, new: str) -> None:
        """Give a node a new id, rewriting every reference to it (inputs, outputs, `when`, `after`)."""
        if new == old:
            return
        problem = rename_problem(new, self.nodes())
        if problem:
            raise FlowError(problem, field=f"nodes.{old}", node=old)
        self._edit(lambda: self._rename(old, new))
        if old in self._valid_ports:
            self._valid_ports[new] = self._valid_ports.pop(old)

    def _rename(self, old: str, new: str) -> None:
        nodes = self.document["nodes"]
        position = list(nodes).index(old)
        nodes.insert(position, new, nodes.pop(old))
        for spec in nodes.values():
            if not isinstance(spec, dict):
                continue
            if isinstance(spec.get("inputs"), dict):
                _rewrite_refs(spec["inputs"], old, new)
            if isinstance(spec.get("when"), str):
                spec["when"] = _styled_like(spec["when"], re.sub(rf"(?<![\w.$]){re.escape(old)}\b", new, spec["when"]))
            if isinstance(spec.get("after"), list):
                spec["after"][:] = [new if name == old else name for name in spec["after"]]
        if isinstance(self.document.get("outputs"), dict):
            _rewrite_refs(self.document["outputs"], old, new)

    def set_section(self, name: str, entries: Mapping[str, Mapping[str, Any]]) -> None:
        """A mapping section of mappings (`inputs`, `models`) becomes `entries`, in their order: an entry
        whose keys are unchanged keeps its text; a changed one keeps the keys the form does not show
        (a value of None removes a key); a new one is written in flow style."""

        def change() -> None:
            section = self._mapping(self.document, name, TOP_ORDER)
            for gone in [k for k in section if k not in entries]:
                section.pop(gone)
            for key, wanted in entries.items():
                old = section.get(key)
                merged = dict(old) if isinstance(old, dict) else {}
                merged.update(wanted)
                merged = {k: v for k, v in merged.items() if v is not None}
                if isinstance(old, dict) and _plain(old) == merged:
                    continue
                if isinstance(old, dict):
                    for k in [k for k in old if k not in merged]:
                        old.pop(k)
                    for k, v in merged.items():
                        if old.get(k) != v:
                            old[k] = _styled_like(old.get(k), v)
                else:
                    section[key] = yaml_value(merged)
                    section[key].fa.set_flow_style()
            order = list(entries)
            if list(section) != order:
                items = [(k, section[k]) for k in order]
                for k in order:
                    section.pop(k)
                for k, v in items:
                    section[k] = v
            if not section:
                self.document.pop(name)

        self._edit(change)

    def set_outputs(self, outputs: Mapping[str, str]) -> None:
        """The flow's outputs become `outputs` (name → reference such as `$node.port`), in their order."""

        def change() -> None:
            section = self._mapping(self.document, "outputs", TOP_ORDER)
            if list(section) == list(outputs) and all(str(section[k]) == v for k, v in outputs.items()):
                return
            for gone in [k for k in section if k not in outputs]:
                section.pop(gone)
            for key, value in outputs.items():
                if str(section.get(key)) != value:
                    section[key] = _styled_like(section.get(key), value)
            if list(section) != list(outputs):
                items = [(k, section[k]) for k in outputs]
                for k in outputs:
                    section.pop(k)
                for k, v in items:
                    section[k] = v
            if not section:
                self.document.pop("outputs")

        self._edit(change)

    def set_config(self, node_id: str, changes: Mapping[str, Any]) -> None:
        """Set config fields (None removes one, back to the type's default)."""

        def change() -> None:
            node = self.document["nodes"][node_id]
            config = self._mapping(node, "config", NODE_ORDER)
            for key, value in changes.items():
                if value is None:
                    config.pop(key, None)
                elif config.get(key) != value:
                    config[key] = _styled_like(config.get(key), value)
            if not config:
                node.pop("config")

        self._edit(change, node=node_id)

    def set_field(self, node_id: str, key: str, value: Any) -> None:
        """Set or (with None or "") remove a node-level field such as `description` or `model`."""
        if self.node(node_id).get(key) == value or (value in (None, "") and key not in self.node(node_id)):
            return
        node = self.document["nodes"][node_id]
        self._edit(
            lambda: node.pop(key) if value in (None, "") else _insert_ordered(node, key, yaml_value(value), NODE_ORDER),
            node=node_id,
        )


def _plain(value: Any) -> Any:
    from studio.editor.fields import plain

    return plain(value)


def rename_problem(new: str, taken: Mapping[str, Any]) -> str | None:
    """Why `new` cannot be a node id here (None when it can)."""
    if not re.match(NODE_ID, new) or new == FLOW_INPUTS:
        return f"{new!r} is not a node id: lowercase letters, digits and _, starting with a letter"
    return f"there is a node {new!r} already" if new in taken else None


def _rewrite_refs(container: Any, old: str, new: str) -> None:
    """Every `$old.port` in a mapping's or list's string values (nested too) becomes `$new.port`, in place."""
    keys = list(container) if isinstance(container, dict) else range(len(container))
    for key in keys:
        value = container[key]
        if isinstance(value, (dict, list)):
            _rewrite_refs(value, old, new)
        elif isinstance(value, str) and f"${old}." in value:
            container[key] = _styled_like(value, re.sub(rf"\${re.escape(old)}(?=\.)", f"${new}", value))


def edge_id(source: str, source_port: str, target: str, target_port: str) -> str:
    """`summarise.text->headline.summary`: what the canvas sends back to delete an edge."""
    return f"{source}.{source_port}->{target}.{target_port}"


def edges(flow: EditableFlow) -> list[tuple[str, str, str, str]]:
    """(source, source port, target, target port) for every wire (each reference in a list of them too)
    and every flow output read from the graph."""
    found = []
    for node_id, spec in flow.nodes().items():
        for name, value in dict((spec or {}).get("inputs") or {}).items():
            parsed = parse_value(value)
            for ref in (
                [parsed] if isinstance(parsed, Ref) else refs_in(parsed)
            ):  # a list or mapping of refs: one wire each
                found.append((INPUTS if ref.node == FLOW_INPUTS else ref.node, ref.port, str(node_id), str(name)))
    for name, value in flow.section("outputs").items():
        ref = parse_value(value)
        if isinstance(ref, Ref):
            found.append((INPUTS if ref.node == FLOW_INPUTS else ref.node, ref.port, OUTPUTS, str(name)))
    return found


def template_variables(source: str) -> list[str]:
    """A template's variables, sorted (empty when it does not parse)."""
    try:
        return sorted(templates.variables(source))
    except Exception:  # the inspector lists what it can
        return []
