"""A Dify graph being converted: node ids, and Dify value selectors read as wires."""

from __future__ import annotations

import json
import re
from typing import Any

from studio.errors import FlowError
from studio.importers.build import FlowBuilder, jmes, slug
from studio.importers.dify_agent import port as agent_port
from studio.importers.dify_lists import list_port
from studio.importers.dify_tools import HTTP_TOOLS, PYTHON_TOOLS
from studio.importers.report import ImportReport

VAR = re.compile(r"\{\{#([A-Za-z0-9_\-]+)\.([A-Za-z0-9_.\-]+)#\}\}")
TEXT = re.compile(VAR.pattern + r"|\{\{#context#\}\}|\{[{%#]")
"""In Dify's plain text: a `{{#node.var#}}` reference, the context slot, or Jinja syntax to escape."""
PORTS = {
    "llm": {"text": "text"},
    "template-transform": {"output": "text"},
    "http-request": {"body": "text", "status_code": "status", "headers": "headers"},
    "knowledge-retrieval": {"result": "results"},
    "variable-aggregator": {"output": "value"},
    "question-classifier": {"class_name": "label"},
    "document-extractor": {"text": "text"},
}


class Ctx:
    """One Dify graph being converted (the app, or an iteration's body)."""

    def __init__(
        self, builder: FlowBuilder, report: ImportReport, nodes: list[dict[str, Any]], lines: dict[str, int | None]
    ) -> None:
        self.b, self.report, self.lines = builder, report, lines
        self.by_id = {str(n["id"]): n for n in nodes}
        self.ids: dict[str, str] = {}
        self.start: str | None = None
        self.outer: dict[str, str] = {}
        """Inside an iteration: outer wires the body reads, by the sub-flow input that carries them."""
        self.item: str | None = None
        self.answer: str | None = None
        self.current: str | None = None
        """The Dify id of the node being converted (errors name its line)."""
        """The text.template the last `answer` node became, if any (it takes the node's place)."""

    def kind(self, dify_id: str) -> str:
        return str(self.by_id.get(dify_id, {}).get("data", {}).get("type", ""))

    def wire(self, selector: Any) -> Any:
        """A Dify value selector (`[node_id, var, ...]`) as a wire."""
        if not isinstance(selector, list) or len(selector) < 2:
            return None
        head, var, *rest = (str(s) for s in selector)
        if head == self.start and var.partition(".")[0] in ("sys", "env", "conversation"):
            # Older exports name system variables through the start node: [start, "sys.query"].
            head, var = var.split(".", 1) if "." in var else (var, rest.pop(0) if rest else "")
        if head in ("sys", "env", "conversation"):
            if self.item is not None:
                return self._outer([head, var])
            what = {"sys": "system variable", "env": "environment variable", "conversation": "conversation variable"}
            kind = "list" if (head, var) == ("sys", "files") else "str"
            self.b.inputs.setdefault(var, {"type": kind, "description": f"Dify's {what[head]} {head}.{var}"})
            return f"$inputs.{var}"
        if self.item is not None and head == self.item:
            if var != "item":
                self.b.inputs.setdefault("index", {"type": "int"})
            return f"$inputs.{'item' if var == 'item' else 'index'}"
        if head == self.start:
            return f"$inputs.{var}"
        if head not in self.ids:
            if self.item is not None:
                return self._outer([head, var, *rest])
            line = self.lines.get(self.current or "")
            raise FlowError(f"a reference to {head}.{var}, which is not a node", file=self.report.file, line=line)
        node_id, kind = self.ids[head], self.kind(head)
        port = agent_port(self.by_id[head]["data"], var) if kind == "agent" else PORTS.get(kind, {}).get(var)
        tool = str(self.by_id[head]["data"].get("tool_name")) if kind == "tool" else ""
        if kind == "code" or tool in PYTHON_TOOLS:
            return self.b.field(f"${node_id}.result", jmes([var, *rest]), node_id)
        if kind == "list-operator":
            port, path = list_port(var)
            return self.b.field(f"${node_id}.{port}", path, node_id) if path else f"${node_id}.{port}"
        if kind == "iteration":
            return self.b.field(f"${node_id}.results", "[*].output", node_id)
        if tool in HTTP_TOOLS:
            port = HTTP_TOOLS[tool].ports.get(var)
        if port is None:
            port = var
        wire = f"${node_id}.{port}"
        return self.b.field(wire, jmes(rest), node_id) if rest else wire

    def _outer(self, selector: list[str]) -> str:
        name = re.sub(r"[^a-z0-9_]", "_", f"{selector[0]}_{selector[1]}".lower())
        name = name if name[0].isalpha() else f"v_{name}"
        self.outer[name] = json.dumps(selector)
        self.b.inputs.setdefault(name, {"type": "any"})
        return f"$inputs.{name}"

    def template(self, text: str, inputs: dict[str, Any]) -> str:
        """Dify text with `{{#node.var#}}` references → a Jinja template; the wires go to `inputs`."""

        def swap(match: re.Match[str]) -> str:
            if match.group(1) is None:  # Jinja syntax in Dify's plain text is literal text
                token = match.group(0)
                return token if token == "{{#context#}}" else "{{ '" + token + "' }}"
            head, var = match.group(1), match.group(2)
            wire = self.wire([head, *var.split(".")])
            if wire is None:
                return match.group(0)
            own = head in ("sys", self.start) or (self.item is not None and head == self.item)
            name = slug(var if own else f"{self.ids.get(head, head)}_{var}", "value")
            base, n = name, 2
            while inputs.get(name, wire) != wire:
                name, n = f"{base}_{n}", n + 1
            inputs[name] = wire
            return "{{ " + name + " }}"

        return TEXT.sub(swap, text)
