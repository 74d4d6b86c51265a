"""What the importers share: a flow under construction, and writing it (flow, sub-flows, layout)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studio.errors import FlowError
from studio.importers.report import ImportReport
from studio.runtime.registry import with_role

_ESCAPE = re.compile(r"^\$[A-Za-z]")


def slug(text: str, fallback: str) -> str:
    """A node id (`[a-z][a-z0-9_]*`) from a source name or title; `fallback` when nothing is left."""
    words = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    if not words:
        words = re.sub(r"[^a-z0-9]+", "_", fallback.lower()).strip("_") or "node"
    if not words[0].isalpha():
        words = f"n_{words}"
    return words[:48].rstrip("_")


def literal(value: Any) -> Any:
    """A source value written as a literal: `$word` text escaped as `$$word` (else it reads as a wire)."""
    if isinstance(value, str):
        return "$" + value if _ESCAPE.match(value) else value
    if isinstance(value, list):
        return [literal(v) for v in value]
    if isinstance(value, dict):
        return {k: literal(v) for k, v in value.items()}
    return value


def jmes(parts: list[str]) -> str:
    """A JMESPath reading nested fields `parts` (names that are not identifiers quoted)."""
    return ".".join(p if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p) else json.dumps(p) for p in parts)


@dataclass
class Imported:
    """An imported flow, ready to be written: the flow mapping, positions, sub-flows and the report."""

    flow: dict[str, Any]
    """The flow file's content."""
    report: ImportReport
    """What became of each source node."""
    layout: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Canvas positions by node id (empty: the studio lays the graph out)."""
    sub_flows: dict[str, Imported] = field(default_factory=dict)
    """Sub-flows by file name, written beside the flow (`control.map` bodies)."""
    header: str = ""
    """Comment lines put at the top of the flow file."""
    files: dict[str, str] = field(default_factory=dict)
    """Other files written beside the flow, by name (Python tool modules the flow's `tools:` names)."""


class FlowBuilder:
    """A flow under construction: unique node ids, model aliases, helper nodes for fields."""

    def __init__(self, name: str, description: str = "") -> None:
        self.name = slug(name, "imported").replace("_", "-")
        self.description = description
        self.inputs: dict[str, dict[str, Any]] = {}
        self.outputs: dict[str, Any] = {}
        self.models: dict[str, dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.layout: dict[str, tuple[float, float]] = {}
        self.sub_flows: dict[str, Imported] = {}
        self.tools: dict[str, str] = {}
        self.files: dict[str, str] = {}
        self._taken: set[str] = {"inputs"}
        self._aliases: dict[tuple[str, float | None], str] = {}
        self.origins: list[str] = []

    def new_id(self, wanted: str, fallback: str = "node") -> str:
        """A free node id made from `wanted` (`summary`, `summary_2`, ...), reserved at once."""
        base = slug(wanted, fallback)
        node_id, n = base, 2
        while node_id in self._taken:
            node_id, n = f"{base}_{n}", n + 1
        self._taken.add(node_id)
        return node_id

    def field(self, wire: str, path: str, near: str) -> str:
        """A wire to `path` (a JMESPath) inside the value of `wire`, through a `data.extract` node
        shared by every reader of the same field."""
        key = f"{near}_{re.sub(r'[^A-Za-z0-9]+', '_', path)}"
        for node_id, spec in self.nodes.items():
            if (
                spec.get("type") == with_role("extract")
                and spec["inputs"]["data"] == wire
                and spec["config"]["path"] == path
            ):
                return f"${node_id}.value"
        node_id = self.new_id(key)
        self.nodes[node_id] = {"type": with_role("extract"), "inputs": {"data": wire}, "config": {"path": path}}
        return f"${node_id}.value"

    def alias(self, model: str, temperature: float | None, origin: str) -> str | None:
        """The model alias for `model` at `temperature`: the first one is `default` (returned as
        None: nodes then omit `model:`), the others are named after the model."""
        key = (model, temperature)
        if key not in self._aliases:
            name = "default" if not self._aliases else self.new_alias_name(model)
            settings: dict[str, Any] = {"model": model}
            if temperature is not None:
                settings["temperature"] = temperature
            self.models[name] = settings
            self._aliases[key] = name
            self.origins.append(f"model alias `{name}` = {model} ({origin}); map it once with --model {name}=...")
        name = self._aliases[key]
        return None if name == "default" else name

    def new_alias_name(self, model: str) -> str:
        """An alias name from a model string, unique among the aliases."""
        base = slug(model.rsplit("/", 1)[-1], "model")
        name, n = base, 2
        while name in self.models:
            name, n = f"{base}_{n}", n + 1
        return name

    def placeholder(self, node_id: str, source: str, reason: str) -> None:
        """A node that fails clearly when run, standing where `source` could not be converted."""
        message = f"not converted from {source}: {reason}"
        self.nodes[node_id] = {
            "type": with_role("python_code"),
            "description": f"PLACEHOLDER - {message}",
            "config": {"code": f"raise NotImplementedError({message!r})\n"},
        }

    def retarget(self, node_id: str, port: str) -> None:
        """Point every wire from `node_id` at its `port` (a placeholder has only `result`)."""
        pattern = re.compile(rf"^\${node_id}\.[A-Za-z_][A-Za-z0-9_]*$")

        def fix(value: Any) -> Any:
            if isinstance(value, str):
                return f"${node_id}.{port}" if pattern.match(value) else value
            if isinstance(value, list):
                return [fix(v) for v in value]
            if isinstance(value, dict):
                return {k: fix(v) for k, v in value.items()}
            return value

        for spec in self.nodes.values():
            spec["inputs"] = fix(spec.get("inputs", {}))
        self.outputs = fix(self.outputs)

    def rewire(self, old: str, new: str) -> None:
        """Every wire `old` (`$inputs.item`) now reads `new`; `when:` expressions too."""
        pattern = re.compile(rf"(?<![\w.$]){re.escape(old[1:])}\b")

        def fix(value: Any) -> Any:
            if isinstance(value, list):
                return [fix(v) for v in value]
            if isinstance(value, dict):
                return {k: fix(v) for k, v in value.items()}
            return new if value == old else value

        for spec in self.nodes.values():
            spec["inputs"] = fix(spec.get("inputs", {}))
            if isinstance(spec.get("when"), str):
                spec["when"] = pattern.sub(new[1:], spec["when"])
        self.outputs = fix(self.outputs)

    def flow(self) -> dict[str, Any]:
        """The flow mapping, keys in the canonical order."""
        flow: dict[str, Any] = {"flowstudio": 1, "name": self.name}
        if self.description:
            flow["description"] = self.description
        for key, value in (
            ("inputs", self.inputs),
            ("outputs", self.outputs),
            ("models", self.models),
            ("tools", self.tools),
        ):
            if value:
                flow[key] = value
        flow["nodes"] = self.nodes
        return flow

    def build(self, report: ImportReport, header: str) -> Imported:
        """The finished import."""
        report.notes[:0] = self.origins
        return Imported(self.flow(), report, dict(self.layout), dict(self.sub_flows), header, dict(self.files))


def flow_text(imported: Imported) -> str:
    """The flow file's text, in canonical form, with the header comment on top."""
    from studio.flow.fmt import dump, format_text, yaml_value

    text = format_text(dump(yaml_value(imported.flow)))
    header = "".join(f"# {line}\n".replace("# \n", "#\n") for line in imported.header.splitlines())
    return header + text


def targets(imported: Imported, out: Path) -> list[Path]:
    """Every file `write_import` would write: the flow, its sub-flows, and their sidecars."""
    flows = [(imported, out), *((sub, out.parent / name) for name, sub in imported.sub_flows.items())]
    files = [out.parent / name for name in imported.files]
    return [*files, *(p for flow, path in flows for p in (path, sidecar(path)) if p == path or flow.layout)]


def sidecar(flow: Path) -> Path:
    """`NAME.yaml` → `NAME.layout.yaml`, the editor's sidecar."""
    return flow.with_name(f"{flow.stem}.layout.yaml")


def write_import(imported: Imported, out: Path, *, overwrite: bool = False) -> list[Path]:
    """Write the flow, its sub-flows (beside it) and its layout sidecar; then check that the flow
    validates (when it does not, nothing written stays and FlowError says why). An existing file is
    replaced only with `overwrite`."""
    from studio.flow.spec import load_flow
    from studio.runtime.compiler import compile_flow

    taken = [p for p in targets(imported, out) if p.exists()]
    if taken and not overwrite:
        raise FlowError("already exists; choose another --out or pass --force to replace it", file=str(taken[0]))
    written: list[Path] = []
    try:
        for name, text in imported.files.items():
            (out.parent / name).parent.mkdir(parents=True, exist_ok=True)
            (out.parent / name).write_text(text, encoding="utf-8")
            written.append(out.parent / name)
        for name, sub in imported.sub_flows.items():
            written += write_files(sub, out.parent / name)
        written += write_files(imported, out)
        for name in imported.sub_flows:
            compile_flow(load_flow(out.parent / name))
        compile_flow(load_flow(out))
    except FlowError as err:
        for path in written:
            path.unlink(missing_ok=True)
        raise FlowError(f"the imported flow does not validate ({err}); nothing was written", file=str(out)) from None
    return written


def write_files(imported: Imported, out: Path) -> list[Path]:
    """Write one flow file (and its sidecar when it has positions)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(flow_text(imported), encoding="utf-8")
    written = [out]
    if imported.layout:
        side = sidecar(out)
        side.write_text(layout_text(out.stem, imported.layout), encoding="utf-8")
        written.append(side)
    return written


def layout_text(flow_name: str, layout: dict[str, tuple[float, float]]) -> str:
    """The layout sidecar (`NAME.layout.yaml`, the editor's format: `nodes: {id: {x, y}}`)."""
    import yaml

    nodes = {node_id: {"x": round(x, 1), "y": round(y, 1)} for node_id, (x, y) in layout.items()}
    body = yaml.safe_dump({"nodes": nodes}, sort_keys=False, default_flow_style=None, width=4096)
    return f"# Canvas positions for {flow_name}.yaml, taken from the imported file.\n{body}"
