"""A flow file under edit: canvas gestures become edits of its round-trip YAML document.

Every method changes the document the smallest way it can: a new wire is one key in a
node's `inputs`, a prompt edit replaces that one value. The text is dumped again only after
an edit, so a flow that was opened and not edited keeps its exact bytes.
"""

from __future__ import annotations

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
from studio.types import ANY, PortType

ADD_PORT = "+"
"""The handle that creates a new flow input, flow output or template variable."""
STARTERS: dict[str, dict[str, Any]] = {
    "llm.generate": {"prompt": "{{ text }}"},
    "llm.structured": {"prompt": "{{ text }}", "fields": {"answer": "str"}},
    "llm.classify": {"labels": ["yes", "no"]},
    "text.template": {"template": "{{ text }}"},
    "human.input": {"prompt": "Please review: {{ text }}"},
    "data.extract": {"path": "value"},
}
"""Config a node gets when it is added from the palette: the smallest one that compiles."""
DEFAULT_MODELS = {"default": {"model": "local/smollm2", "temperature": 0, "max_tokens": 60}}


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


def _parse(text: str) -> tuple[Any, bool]:
    """ruamel's round-trip document of `text`, and whether dumping it gives `text` back."""
    document = round_trip_yaml().load(text)
    return document, dump(document) == text


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
        self._parsing: Future[tuple[Any, bool]] | None = None
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
            document, canonical = self._parsing.result() if self._parsing else _parse(self.text)
            self._document, self._parsing = document, None
            self.canonical = canonical if self.canonical is None else self.canonical
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
            found[str(node_id)] = node_ports(str(spec.get("type", "")), dict(config), dict(inputs), self.path.parent)
        self._ports = (self.text, found)
        return found

    def input_types(self) -> dict[str, PortType]:
        return {str(name): flow_input_type(spec) for name, spec in self.section("inputs").items()}

    # -- editing -----------------------------------------------------------------------------

    def _edit(self, change: Any) -> Any:
        """Run `change()` on the document and refresh the text (carrying it onto a hand-made layout)."""
        document = self.document  # parsed, and `canonical` known
        before = self.text if self.canonical else dump(document)
        result = change()
        after = dump(self.document)
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

    def add_node(self, node_type: str) -> str:
        """Append a node of `node_type` with its starter config; returns its new id."""
        node_id = _unique(node_type.rsplit(".", 1)[-1].replace("-", "_"), self.nodes())
        spec: dict[str, Any] = {"type": node_type}
        if node_type in STARTERS:
            spec["config"] = STARTERS[node_type]

        def change() -> None:
            if not self.section("models") and self._uses_model(node_type):
                _insert_ordered(self.document, "models", yaml_value(DEFAULT_MODELS), TOP_ORDER)
                self.document["models"]["default"].fa.set_flow_style()
            self._mapping(self.document, "nodes", TOP_ORDER)[node_id] = yaml_value(spec)

        self._edit(change)
        return node_id

    def _uses_model(self, node_type: str) -> bool:
        try:
            return instantiate(node_type, STARTERS.get(node_type, {}), self.path.parent).uses_model
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
            )
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

        self._edit(change)

    def set_field(self, node_id: str, key: str, value: Any) -> None:
        """Set or (with None or "") remove a node-level field such as `description` or `model`."""
        if self.node(node_id).get(key) == value or (value in (None, "") and key not in self.node(node_id)):
            return
        node = self.document["nodes"][node_id]
        self._edit(
            lambda: node.pop(key) if value in (None, "") else _insert_ordered(node, key, yaml_value(value), NODE_ORDER)
        )


def edge_id(source: str, source_port: str, target: str, target_port: str) -> str:
    """`summarise.text->headline.summary`: what the canvas sends back to delete an edge."""
    return f"{source}.{source_port}->{target}.{target_port}"


def edges(flow: EditableFlow) -> list[tuple[str, str, str, str]]:
    """(source, source port, target, target port) for every wire and every flow output read from the graph."""
    found = []
    for node_id, spec in flow.nodes().items():
        for name, value in dict((spec or {}).get("inputs") or {}).items():
            ref = parse_value(value)
            if isinstance(ref, Ref):
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
