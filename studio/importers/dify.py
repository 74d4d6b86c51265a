"""Dify DSL (workflow and advanced-chat apps) → a flow file. See docs/importing.md for the mapping."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from studio.errors import FlowError
from studio.flow.loader import Document
from studio.importers.build import FlowBuilder, Imported, jmes, literal, slug
from studio.importers.dify_agent import agent
from studio.importers.dify_agent import port as agent_port
from studio.importers.dify_tools import HTTP_TOOLS, PYTHON_CONFIG, PYTHON_TOOLS
from studio.importers.report import ImportReport, NodeReport
from studio.importers.sources import load_yaml, sandbox_notes, tool_function

_VAR = re.compile(r"\{\{#([A-Za-z0-9_\-]+)\.([A-Za-z0-9_.\-]+)#\}\}")
_TEXT = re.compile(_VAR.pattern + r"|\{\{#context#\}\}|\{[{%#]")
"""In Dify's plain text: a `{{#node.var#}}` reference, the context slot, or Jinja syntax to escape."""
INPUT_TYPES = {"text-input": "str", "paragraph": "str", "select": "str", "number": "float"}
PORTS = {
    "llm": {"text": "text"},
    "template-transform": {"output": "text"},
    "http-request": {"body": "text", "status_code": "status", "headers": "headers"},
    "knowledge-retrieval": {"result": "results"},
    "variable-aggregator": {"output": "value"},
    "question-classifier": {"class_name": "label"},
}
FIELD_TYPES = {"string": "str", "number": "float", "bool": "bool", "boolean": "bool", "select": "str",
               "array[string]": "list[str]", "array[number]": "list[float]", "array[object]": "list[dict]",
               "array[bool]": "list[bool]", "object": "dict"}  # fmt: skip
OPERATORS = {
    "contains": "({r} is not none and {v} in {r})", "not contains": "({r} is none or {v} not in {r})",
    "start with": "({r} or '').startswith({v})", "end with": "({r} or '').endswith({v})",
    "is": "{r} == {v}", "is not": "{r} != {v}", "empty": "not {r}", "not empty": "{r}",
    "=": "{r} == {n}", "≠": "{r} != {n}", ">": "{r} > {n}", "<": "{r} < {n}", "≥": "{r} >= {n}", "≤": "{r} <= {n}",
    "null": "{r} is none", "not null": "{r} is not none",
}  # fmt: skip


SPREAD = (1.4, 1.6)
"""Dify's cards are smaller than the canvas' cards: positions are spread by this much (x, y)."""


class _Ctx:
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
            self.b.inputs.setdefault(var, {"type": "str", "description": f"Dify's {what[head]} {head}.{var}"})
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

        return _TEXT.sub(swap, text)


NOTE = "custom-note"
"""Canvas type of Dify's sticky notes: text on the canvas, not a node of the graph."""


def import_dify(source: Path, *, allow_placeholders: bool = False) -> Imported:
    """Import a Dify DSL file (workflow or advanced-chat). Raises FlowError for an invalid source;
    nodes that cannot be converted are in the report (placeholders only with `allow_placeholders`)."""
    doc = load_yaml(source)
    data = doc.data
    app = data.get("app") if isinstance(data, dict) else None
    workflow = data.get("workflow") if isinstance(data, dict) else None
    graph = workflow.get("graph") if isinstance(workflow, dict) else None
    graph = graph if isinstance(graph, dict) else {}
    if (
        not isinstance(app, dict)
        or app.get("mode") not in ("workflow", "advanced-chat")
        or not isinstance(graph.get("nodes"), list)
    ):
        raise FlowError(
            "not a Dify workflow or advanced-chat app (app.mode and workflow.graph.nodes)", file=doc.file, line=1
        )
    nodes = [
        n
        for n in graph["nodes"]
        if isinstance(n, dict) and "id" in n and isinstance(n.get("data"), dict) and n.get("type") != NOTE
    ]
    given = graph.get("edges")
    raw_edges: list[Any] = given if isinstance(given, list) else []
    edges = [e for e in raw_edges if isinstance(e, dict)]
    lines = {
        str(n["id"]): doc.line_of(("workflow", "graph", "nodes", i))
        for i, n in enumerate(graph["nodes"])
        if isinstance(n, dict) and "id" in n
    }
    _check_graph(doc, nodes, raw_edges)
    report = ImportReport(doc.file)
    builder = FlowBuilder(str(app.get("name") or source.stem), str(app.get("description") or ""))
    if app["mode"] == "advanced-chat":
        report.notes.append("advanced-chat: the user's message is the input `query`; conversation memory is not kept")
    top = [n for n in nodes if not n.get("parentId")]
    _convert_graph(_Ctx(builder, report, nodes, lines), top, edges, nodes, source, allow_placeholders)
    header = "\n".join([f"Imported from Dify ({source.name}) by `flowstudio import dify`.", *builder.origins])
    return builder.build(report, header)


def _check_graph(doc: Document, nodes: list[dict[str, Any]], edges: list[Any]) -> None:
    """Refuse what Dify would not load: two nodes with one id, an edge from or to no node."""
    ids: set[str] = set()
    for i, node in enumerate(doc.data["workflow"]["graph"]["nodes"]):
        if isinstance(node, dict) and str(node.get("id")) in ids:
            raise FlowError(
                f"two nodes with id {node.get('id')!r}",
                file=doc.file,
                line=doc.line_of(("workflow", "graph", "nodes", i)),
            )
        ids.add(str(node.get("id")) if isinstance(node, dict) else "")
    known = {str(n["id"]) for n in nodes}
    for i, edge in enumerate(edges):
        for end in ("source", "target"):
            if not isinstance(edge, dict) or str(edge.get(end)) not in known:
                where = doc.line_of(("workflow", "graph", "edges", i))
                raise FlowError(f"an edge's {end} is not a node", file=doc.file, line=where)


def _convert_graph(
    ctx: _Ctx,
    nodes: list[dict[str, Any]],
    edges: list[dict[str, Any]],
    every: list[dict[str, Any]],
    source: Path,
    placeholders: bool,
) -> None:
    inside = {str(n["id"]) for n in nodes}
    edges = [e for e in edges if str(e.get("source")) in inside and str(e.get("target")) in inside]
    for node in nodes:
        data = node["data"]
        if data.get("type") == "start":
            ctx.start = str(node["id"])
        elif data.get("type") not in ("end", "answer", "iteration-start"):
            ctx.ids[str(node["id"])] = ctx.b.new_id(
                str(data.get("title") or ""), str(data.get("type", "node")).replace("-", "_")
            )
    stand_ins: list[str] = []
    for node in _ordered(nodes, edges):
        data, dify_id = node["data"], str(node["id"])
        entry = NodeReport(str(data.get("title") or dify_id), str(data.get("type")), ctx.lines.get(dify_id))
        if data.get("type") != "iteration-start":
            ctx.report.nodes.append(entry)
        ctx.current = dify_id
        _convert(ctx, node, entry, every, edges, source)
        if entry.status == "not converted" and placeholders and dify_id in ctx.ids:
            ctx.b.placeholder(ctx.ids[dify_id], f"{entry.source} ({entry.kind})", entry.notes[-1])
            stand_ins.append(ctx.ids[dify_id])
        position = node.get("position") or {}
        target = ctx.ids.get(dify_id) or {"start": "$inputs", "end": "$outputs", "answer": "$outputs"}.get(
            str(data.get("type"))
        )
        if target and all(isinstance(position.get(k), int | float) for k in ("x", "y")):
            x, y = float(position["x"]), float(position["y"])
            if data.get("type") == "answer" and ctx.answer:
                ctx.b.layout[ctx.answer], x = (x * SPREAD[0], y * SPREAD[1]), x + 340.0
                ctx.answer = None
            ctx.b.layout[target] = (x * SPREAD[0], y * SPREAD[1])
    for node_id in stand_ins:
        ctx.b.retarget(node_id, "result")
    _guards(ctx, nodes, edges)


def _ordered(nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Nodes in the order of the edges (so a node's sources are converted before it)."""
    incoming: dict[str, set[str]] = {str(n["id"]): set() for n in nodes}
    for e in edges:
        incoming[str(e["target"])].add(str(e["source"]))
    done: list[dict[str, Any]] = []
    left = list(nodes)
    while left:
        ready = [n for n in left if incoming[str(n["id"])] <= {str(d["id"]) for d in done}] or left[:1]
        done.append(ready[0])
        left.remove(ready[0])
    return done


def _guards(ctx: _Ctx, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> None:
    """Branches: a node after an if-else case or a classifier class gets a `when:`; a node all of
    whose incoming edges carry the same guard inherits it; a join (different guards) runs."""
    guard: dict[str, str | None] = {}
    for node in _ordered(nodes, edges):
        dify_id = str(node["id"])
        found = set()
        for e in (e for e in edges if str(e["target"]) == dify_id):
            found.add(_edge_guard(ctx, e, guard))
        guard[dify_id] = found.pop() if len(found) == 1 else None
        node_id = ctx.ids.get(dify_id)
        if guard[dify_id] and node_id in ctx.b.nodes:
            ctx.b.nodes[node_id]["when"] = guard[dify_id]


def _edge_guard(ctx: _Ctx, edge: dict[str, Any], guard: dict[str, str | None]) -> str | None:
    source = str(edge["source"])
    own = guard.get(source)
    handle = str(edge.get("sourceHandle") or "source")
    node_id = ctx.ids.get(source)
    kind = ctx.kind(source)
    if kind == "if-else" and node_id:
        mine = f"{node_id}.text == {json.dumps(handle)}"
    elif kind == "question-classifier" and node_id:
        classes = {str(c.get("id")): str(c.get("name")) for c in ctx.by_id[source]["data"].get("classes") or []}
        mine = f"{node_id}.label == {json.dumps(classes.get(handle, handle))}"
    else:
        return own
    return f"({own}) and {mine}" if own else mine


def _convert(
    ctx: _Ctx,
    node: dict[str, Any],
    entry: NodeReport,
    every: list[dict[str, Any]],
    edges: list[dict[str, Any]],
    source: Path,
) -> None:
    data, dify_id = node["data"], str(node["id"])
    kind = str(data.get("type"))
    handlers = {
        "start": _start, "end": _end, "answer": _answer, "llm": _llm, "template-transform": _template,
        "code": _code, "if-else": _if_else, "question-classifier": _classifier,
        "parameter-extractor": _extractor, "http-request": _http, "knowledge-retrieval": _knowledge,
        "variable-aggregator": _aggregator, "variable-assigner": _aggregator, "assigner": _assigner,
        "tool": _tool, "agent": agent,
    }  # fmt: skip
    if kind == "iteration-start":
        return
    if kind == "iteration":
        spec = _iteration(ctx, node, entry, every, edges, source)
    elif kind in handlers:
        try:
            spec = handlers[kind](ctx, data, entry)
        except (AttributeError, TypeError, KeyError) as err:  # a field of another shape than the DSL's
            entry.refuse(f"a field is not in the shape Dify writes ({type(err).__name__}: {err})")
            return
    else:
        entry.refuse(f"Dify node type {kind!r} has no built-in equivalent")
        return
    if spec is not None and dify_id in ctx.ids:
        spec.setdefault("description", f"Dify: {data.get('title') or kind}")
        ctx.b.nodes[ctx.ids[dify_id]] = spec


def _start(ctx: _Ctx, data: dict[str, Any], entry: NodeReport) -> None:
    for var in data.get("variables") or []:
        spec: dict[str, Any] = {"type": INPUT_TYPES.get(str(var.get("type")), "any")}
        if var.get("label"):
            spec["description"] = str(var["label"])
        if not var.get("required", True):
            spec["default"] = None if spec["type"] != "str" else ""
        if var.get("type") in ("file", "file-list"):
            entry.approximate(f"file input {var.get('variable')!r} becomes an `any` input (a path or text)")
        ctx.b.inputs[str(var.get("variable"))] = spec


def _outputs(ctx: _Ctx, pairs: list[tuple[str, Any]]) -> None:
    for name, wire in pairs:
        if name in ctx.b.outputs and wire is not None:
            merge = ctx.b.new_id(f"{name}_merged")
            ctx.b.nodes[merge] = {"type": "control.merge", "inputs": {"options": [ctx.b.outputs[name], wire]}}
            wire = f"${merge}.value"
        ctx.b.outputs[name] = wire


def _end(ctx: _Ctx, data: dict[str, Any], entry: NodeReport) -> None:
    _outputs(ctx, [(str(o.get("variable")), ctx.wire(o.get("value_selector"))) for o in data.get("outputs") or []])


def _answer(ctx: _Ctx, data: dict[str, Any], entry: NodeReport) -> None:
    text = str(data.get("answer") or "")
    whole = _VAR.fullmatch(text.strip())
    if whole:
        _outputs(ctx, [("answer", ctx.wire([whole.group(1), *whole.group(2).split(".")]))])
        return
    inputs: dict[str, Any] = {}
    template = ctx.template(text, inputs)
    node_id = ctx.b.new_id(str(data.get("title") or "answer"), "answer")
    ctx.answer = node_id
    ctx.b.nodes[node_id] = {
        "type": "text.template",
        "inputs": inputs,
        "config": {"template": template},
        "description": "Dify: the answer",
    }
    _outputs(ctx, [("answer", f"${node_id}.text")])


def _model(ctx: _Ctx, data: dict[str, Any], spec: dict[str, Any]) -> None:
    model = data.get("model") or {}
    params = model.get("completion_params") or {}
    provider = str(model.get("provider") or "openai").rsplit("/", 1)[-1]
    string = f"{provider}/{model.get('name') or 'gpt-4o-mini'}"
    temperature = params.get("temperature")
    alias = ctx.b.alias(
        string, float(temperature) if isinstance(temperature, int | float) else None, f"Dify provider {provider}"
    )
    if alias:
        spec["model"] = alias
    tokens = params.get("max_tokens")
    if isinstance(tokens, int) and tokens > 0:
        spec["config"]["max_tokens"] = tokens


def _llm(ctx: _Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    inputs: dict[str, Any] = {}
    messages = data.get("prompt_template") or []
    if isinstance(messages, dict):
        messages = [{"role": "user", "text": messages.get("text", "")}]
    context = data.get("context") or {}
    if context.get("enabled") and context.get("variable_selector"):
        inputs["context"] = ctx.wire(context["variable_selector"])
    system = "\n\n".join(ctx.template(str(m.get("text", "")), inputs) for m in messages if m.get("role") == "system")
    turns = [m for m in messages if m.get("role") != "system"]
    prompt = "\n\n".join(ctx.template(str(m.get("text", "")), inputs) for m in turns)
    if len(turns) > 1:
        entry.approximate("several user/assistant messages are sent as one user message")
    if (data.get("memory") or {}).get("window"):
        entry.approximate("conversation memory is not kept between runs")
    prompt = prompt.replace("{{#context#}}", "{{ context }}")
    system = system.replace("{{#context#}}", "{{ context }}")
    config: dict[str, Any] = {"prompt": prompt or "{{ query }}"}
    if not prompt:
        inputs["query"] = ctx.wire(["sys", "query"])
    if system:
        config["system"] = system
    if str((data.get("model") or {}).get("mode")) == "completion":
        config["form"] = "completion"
    spec = {"type": "llm.generate", "inputs": inputs, "config": config}
    _model(ctx, data, spec)
    return spec


def _named_inputs(ctx: _Ctx, data: dict[str, Any]) -> dict[str, Any]:
    return {
        str(v.get("variable")): ctx.wire(v.get("value_selector"))
        for v in data.get("variables") or []
        if isinstance(v, dict)
    }


def _template(ctx: _Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    return {
        "type": "text.template",
        "inputs": _named_inputs(ctx, data),
        "config": {"template": str(data.get("template") or "")},
    }


def _code(ctx: _Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any] | None:
    if data.get("code_language") != "python3":
        entry.refuse(f"code in {data.get('code_language')}: code.python runs Python only")
        return None
    try:
        func = tool_function(str(data.get("code") or ""), decorator="main", entry="main")
    except ValueError as err:
        entry.refuse(str(err))
        return None
    inputs = _named_inputs(ctx, data)
    call = ", ".join(f"{n}={n}" for n in inputs if n in func.params)
    for note in sandbox_notes(func):
        entry.approximate(note)
    return {
        "type": "code.python",
        "inputs": inputs,
        "config": {"code": f"{func.code}\n\nresult = {func.name}({call})\n"},
    }


def _condition(ctx: _Ctx, cond: dict[str, Any], inputs: dict[str, Any]) -> str:
    wire = ctx.wire(cond.get("variable_selector"))
    name = f"v{len(inputs) + 1}"
    inputs[name] = wire
    value = cond.get("value")
    number = value if isinstance(value, int | float) else _float(value)
    shape = OPERATORS.get(str(cond.get("comparison_operator")), "{r} == {v}")
    return shape.format(r=name, v=json.dumps(value), n=json.dumps(number))


def _float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _if_else(ctx: _Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    cases = data.get("cases") or [
        {
            "case_id": "true",
            "conditions": data.get("conditions") or [],
            "logical_operator": data.get("logical_operator", "and"),
        }
    ]
    inputs: dict[str, Any] = {}
    parts = []
    for i, case in enumerate(cases):
        glue = f" {case.get('logical_operator') or 'and'} "
        test = glue.join(_condition(ctx, c, inputs) for c in case.get("conditions") or []) or "true"
        parts.append(("{% if " if i == 0 else "{% elif ") + test + " %}" + str(case.get("case_id")))
    template = "".join(parts) + "{% else %}false{% endif %}"
    return {
        "type": "text.template",
        "inputs": inputs,
        "config": {"template": template},
        "description": "Dify if-else: the branch taken",
    }


def _classifier(ctx: _Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    labels = [str(c.get("name")) for c in data.get("classes") or []]
    config: dict[str, Any] = {"labels": labels, "form": "chat"}
    if data.get("instruction"):
        config["instructions"] = str(data["instruction"])
    spec = {"type": "llm.classify", "inputs": {"text": ctx.wire(data.get("query_variable_selector"))}, "config": config}
    _model(ctx, data, spec)
    config.pop("max_tokens", None)
    return spec


def _extractor(ctx: _Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for p in data.get("parameters") or []:
        kind = FIELD_TYPES.get(str(p.get("type")), "any")
        if not p.get("required", False):
            kind = f"{kind} | null"
        fields[str(p.get("name"))] = {"type": kind, "description": str(p.get("description") or "")}
    query = data.get("query")
    inputs = {"query": ctx.wire(query)}
    instruction = ctx.template(str(data.get("instruction") or ""), inputs)
    config: dict[str, Any] = {"prompt": "{{ query }}", "fields": fields}
    if instruction:
        config["instructions"] = instruction
    spec = {"type": "llm.structured", "inputs": inputs, "config": config}
    _model(ctx, data, spec)
    return spec


def _text_input(ctx: _Ctx, text: str, near: str) -> Any:
    """Text with references: a literal, one wire, or a text.template node rendering it."""
    whole = _VAR.fullmatch(text.strip())
    if whole:
        return ctx.wire([whole.group(1), *whole.group(2).split(".")])
    inputs: dict[str, Any] = {}
    template = ctx.template(text, inputs)
    if not inputs:
        return literal(text)
    node_id = ctx.b.new_id(near)
    ctx.b.nodes[node_id] = {"type": "text.template", "inputs": inputs, "config": {"template": template}}
    return f"${node_id}.text"


def _pairs(text: Any) -> dict[str, str]:
    lines = str(text or "").splitlines()
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in lines) if k.strip()}


def _http(ctx: _Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    base = slug(str(data.get("title") or ""), "http")
    inputs: dict[str, Any] = {"url": _text_input(ctx, str(data.get("url") or ""), f"{base}_url")}
    config: dict[str, Any] = {"method": str(data.get("method") or "get").upper()}
    headers = _pairs(data.get("headers"))
    if any("{{#" in v for v in headers.values()):
        entry.approximate("headers with variables are sent as written; wire them to the `headers` input")
    auth = data.get("authorization") or {}
    if auth.get("type") == "api-key":
        header = (auth.get("config") or {}).get("header") or "Authorization"
        whole = "`Bearer KEY`" if (auth.get("config") or {}).get("type") == "bearer" else "the key"
        entry.approximate(f"header {header} is read from $env.HTTP_API_KEY: set it to {whole}")
        headers[header] = "$env.HTTP_API_KEY"
    if headers:
        config["headers"] = headers
    params = _pairs(data.get("params"))
    if params:
        inputs["query"] = literal(params)
    body = data.get("body") or {}
    if body.get("type") not in (None, "none"):
        raw = body.get("data")
        if isinstance(raw, list):
            raw = "\n".join(str(d.get("value", "")) for d in raw if isinstance(d, dict))
        inputs["body"] = _text_input(ctx, str(raw or ""), f"{base}_body")
        if body.get("type") != "json":
            entry.approximate(f"a {body.get('type')} body is sent as text")
    return {"type": "tool.http", "inputs": inputs, "config": config}


def _tool(ctx: _Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any] | None:
    """A built-in tool with an HTTP or Python equivalent (studio.importers.dify_tools)."""
    name = str(data.get("tool_name"))
    settings = {str(k): v for k, v in (data.get("tool_configurations") or {}).items()}
    if name in PYTHON_TOOLS:
        tool = PYTHON_TOOLS[name]
        entry.approximate(tool.note)
        given = {var: literal(settings.get(key)) for key, var in PYTHON_CONFIG.items()}
        return {"type": "code.python", "inputs": given, "config": {"code": tool.code}}
    if name not in HTTP_TOOLS:
        entry.refuse(f"tool {data.get('provider_id')}/{name}: no HTTP or Python equivalent is built in")
        return None
    shape, base = HTTP_TOOLS[name], slug(str(data.get("title") or name), "tool")
    inputs: dict[str, Any] = {}
    used = f"{shape.url} {shape.body}"
    prelude = "".join(f"{{% set {k} = {_jinja_value(v)} %}}" for k, v in settings.items() if _plain(k, v) and k in used)
    prelude += "".join(_parameter(ctx, str(k), v, inputs) for k, v in (data.get("tool_parameters") or {}).items())
    request: dict[str, Any] = {"url": _rendered(ctx, f"{base}_url", prelude + shape.url, inputs)}
    if shape.body:
        request["body"] = _rendered(ctx, f"{base}_body", prelude + shape.body, inputs)
    entry.approximate(shape.note)
    config: dict[str, Any] = {"method": shape.method}
    if shape.headers:
        config["headers"] = dict(shape.headers)
    return {"type": "tool.http", "inputs": request, "config": config}


def _jinja_value(value: Any) -> str:
    """A JSON scalar written as a Jinja literal (`none` for null)."""
    return "none" if value is None else json.dumps(value, ensure_ascii=False)


def _plain(key: str, value: Any) -> bool:
    """Whether a tool configuration can be a Jinja variable (a name, and a JSON scalar)."""
    return key.isidentifier() and (value is None or isinstance(value, str | int | float | bool))


def _parameter(ctx: _Ctx, name: str, value: Any, inputs: dict[str, Any]) -> str:
    """One tool parameter as a template variable: a wire in `inputs`, or a `{% set %}` block."""
    kind, raw = (value.get("type"), value.get("value")) if isinstance(value, dict) else ("constant", value)
    if kind == "variable":
        inputs[name] = ctx.wire(raw)
        return ""
    text = str(raw if raw is not None else "")
    whole = _VAR.fullmatch(text.strip())
    if whole:
        inputs[name] = ctx.wire([whole.group(1), *whole.group(2).split(".")])
        return ""
    taken = {k: object() for k in (name, *inputs)}  # the template's own inputs get other names
    own = {**taken}
    jinja = ctx.template(text, own)
    inputs.update({k: v for k, v in own.items() if k not in taken})
    return f"{{% set {name} %}}{jinja}{{% endset %}}"


def _rendered(ctx: _Ctx, near: str, template: str, inputs: dict[str, Any]) -> str:
    """A text.template node rendering `template` from `inputs`; its text wire."""
    node_id = ctx.b.new_id(near)
    ctx.b.nodes[node_id] = {"type": "text.template", "inputs": dict(inputs), "config": {"template": template}}
    return f"${node_id}.text"


def _knowledge(ctx: _Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    table = "knowledge"
    entry.approximate(
        f"Dify knowledge bases are not exported: build the index with `flowstudio index DOCS --table {table} --db knowledge.db`"
    )
    return {
        "type": "retrieve.fts",
        "inputs": {"query": ctx.wire(data.get("query_variable_selector"))},
        "config": {"table": table, "db": "knowledge.db"},
    }


def _aggregator(ctx: _Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    options = [ctx.wire(v) for v in data.get("variables") or []]
    if (data.get("advanced_settings") or {}).get("group_enabled"):
        entry.approximate("grouped aggregation: only the ungrouped variables are merged")
    return {"type": "control.merge", "inputs": {"options": options}}


def _assigner(ctx: _Ctx, data: dict[str, Any], entry: NodeReport) -> dict[str, Any]:
    entry.approximate("conversation variables are not kept between runs: the assigned value is passed on as `value`")
    options = [ctx.wire(data.get("input_variable_selector"))]
    return {"type": "control.merge", "inputs": {"options": options}}


def _iteration(
    ctx: _Ctx,
    node: dict[str, Any],
    entry: NodeReport,
    every: list[dict[str, Any]],
    edges: list[dict[str, Any]],
    source: Path,
) -> dict[str, Any] | None:
    data, dify_id = node["data"], str(node["id"])
    body = [n for n in every if str(n.get("parentId")) == dify_id]
    name = f"{source.stem}-{ctx.ids[dify_id]}".replace("_", "-").lower()
    sub = FlowBuilder(name, f"The body of Dify iteration {data.get('title')!r}")
    sub_report = ImportReport(ctx.report.file)
    inner = _Ctx(sub, sub_report, every, ctx.lines)
    inner.item = dify_id
    inner.b.inputs["item"] = {"type": "any"}
    _convert_graph(inner, body, edges, every, source, False)
    selector = data.get("output_selector") or []
    inner.b.outputs["output"] = inner.wire(selector)
    ctx.report.nodes += sub_report.nodes
    for n in sub_report.nodes:
        if n.status == "not converted":
            entry.refuse(f"its body has a node not converted ({n.source})")
            return None
    if "index" in inner.b.inputs:
        entry.refuse("its body reads the iteration's index, which control.map does not pass to the sub-flow")
        return None
    inner.b.models = {**ctx.b.models, **inner.b.models}
    inputs: dict[str, Any] = {"items": ctx.wire(data.get("iterator_selector"))}
    for input_name, selector_text in inner.outer.items():
        inputs[input_name] = ctx.wire(json.loads(selector_text))
    file = f"parts/{name}.yaml"
    ctx.b.sub_flows[file] = sub.build(
        sub_report, f"Body of the Dify iteration {data.get('title')!r}, imported with {source.name}."
    )
    return {"type": "control.map", "inputs": inputs, "config": {"flow": file, "item": "item"}}
