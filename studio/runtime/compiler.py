"""Compile a validated flow into a frozen Plan: node types, configs, wires, types, cycles."""

from __future__ import annotations

import difflib
import graphlib
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from jinja2 import TemplateSyntaxError
from pydantic import TypeAdapter, ValidationError

from studio.errors import CompileError, FlowError
from studio.flow import paths, templates
from studio.flow.loader import Document
from studio.flow.refs import FLOW_INPUTS, Ref, looks_like_ref, parse_value, refs_in
from studio.flow.spec import Flow, InputSpec, ModelSpec, NodeSpec, RetrySpec, load_flow, parse
from studio.flow.suggest import first_problem, unknown_key
from studio.node import Node, SubFlowSignature, TemplateInputs
from studio.runtime import registry
from studio.types import ANY, PortType, accepts, expected, parse_type, type_of_value

DEFAULT_MODEL = "default"


@dataclass(frozen=True)
class PlanNode:
    """One node, ready to run."""

    id: str
    type: str
    node: Node
    inputs: Mapping[str, Any]
    """Input values with `Ref`s where wires are."""
    data_deps: frozenset[str]
    """Nodes whose outputs this node reads."""
    deps: frozenset[str]
    """Everything that must finish first: data wires, `when` names and `after`."""
    when_deps: frozenset[str]
    """Nodes the `when` guard reads."""
    when: str | None
    model: str | None
    retry: RetrySpec | None
    timeout_s: float | None
    cache: bool


@dataclass(frozen=True)
class Plan:
    """A compiled flow: immutable, in topological order."""

    flow: Flow
    nodes: Mapping[str, PlanNode]
    order: tuple[str, ...]
    inputs: Mapping[str, InputSpec]
    input_types: Mapping[str, PortType]
    outputs: Mapping[str, Any]
    models: Mapping[str, ModelSpec]

    def downstream(self, node_id: str) -> set[str]:
        """`node_id` and every node that depends on it, directly or not."""
        found = {node_id}
        for other in self.order:
            if self.nodes[other].deps & found:
                found.add(other)
        return found


class _Compiler:
    def __init__(self, flow: Flow, model_overrides: Mapping[str, str]) -> None:
        self.flow = flow
        self.spec = flow.spec
        self.models = _apply_overrides(flow, model_overrides)
        self.input_types = self._input_types()
        self.instances: dict[str, Node] = {}

    def fail(self, message: str, *path: str | int, node: str | None = None) -> CompileError:
        field = ".".join(str(p) for p in path) if path else None
        return CompileError(message, file=self.flow.file, line=self.flow.line_of(*path), node=node, field=field)

    def _input_types(self) -> dict[str, PortType]:
        types: dict[str, PortType] = {}
        for name, spec in self.spec.inputs.items():
            try:
                types[name] = parse_type(spec.type)
            except ValueError as err:
                raise self.fail(str(err), "inputs", name, "type") from None
        return types

    def _check_fallbacks(self) -> None:
        for alias, spec in self.models.items():
            for i, other in enumerate(spec.fallbacks):
                if other not in self.models or other == alias:
                    raise self.fail(
                        f"fallback {other!r} is not another alias under `models:`", "models", alias, "fallbacks", i
                    )

    def compile(self) -> Plan:
        self._check_fallbacks()
        for node_id, spec in self.spec.nodes.items():
            self.instances[node_id] = self._instantiate(node_id, spec)
        plan_nodes = {node_id: self._plan_node(node_id, spec) for node_id, spec in self.spec.nodes.items()}
        outputs = {name: self._output(name, value) for name, value in self.spec.outputs.items()}
        order = self._order(plan_nodes)
        return Plan(
            flow=self.flow,
            nodes=MappingProxyType({n: plan_nodes[n] for n in order}),
            order=order,
            inputs=MappingProxyType(dict(self.spec.inputs)),
            input_types=MappingProxyType(self.input_types),
            outputs=MappingProxyType(outputs),
            models=MappingProxyType(self.models),
        )

    def _instantiate(self, node_id: str, spec: NodeSpec) -> Node:
        node_type = registry.get(spec.type)
        if node_type is None:
            hint = registry.suggest(spec.type)
            extra = f"; did you mean {hint!r}?" if hint else ""
            raise self.fail(f"unknown node type {spec.type!r}{extra}", "nodes", node_id, "type", node=node_id)
        try:
            config = node_type.Config.model_validate(spec.config)
        except ValidationError as err:
            first = first_problem(err.errors(include_url=False))
            loc = [str(p) for p in first["loc"]]
            unknown = first["type"] == "extra_forbidden"
            message = unknown_key(node_type.Config, first["loc"], "config field") if unknown else first["msg"]
            raise self.fail(message, "nodes", node_id, "config", *loc, node=node_id) from None
        node = node_type(config, flow_dir=self.flow.base_dir, sub_flows=sub_flow_signature)
        try:
            problems = node.check()
        except FlowError as err:
            raise self.fail(f"sub-flow: {err}", "nodes", node_id, "config", node=node_id) from None
        for field, message in problems:
            raise self.fail(message, "nodes", node_id, "config", field, node=node_id)
        for field, alias in node.model_aliases():
            if alias not in self.models:
                close = difflib.get_close_matches(alias, sorted(self.models), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                message = f"model alias {alias!r} is not defined under `models:`{hint}"
                raise self.fail(message, "nodes", node_id, "config", field, node=node_id)
        for field, source in node.templates():
            try:
                templates.check_syntax(source)
            except TemplateSyntaxError as err:
                raise self.fail(f"template syntax error: {err.message}", "nodes", node_id, "config", field) from None
        for i, name in enumerate(getattr(config, "optional", None) or []):
            if name not in node.input_ports():
                raise self.fail(
                    f"`optional` names {name!r}, which no template reads", "nodes", node_id, "config", "optional", i
                )
        return node

    def _plan_node(self, node_id: str, spec: NodeSpec) -> PlanNode:
        node = self.instances[node_id]
        inputs = {name: parse_value(value) for name, value in spec.inputs.items()}
        self._check_inputs(node_id, node, inputs)
        data_deps = {r.node for r in refs_in(inputs) if r.node != FLOW_INPUTS}
        when_deps = self._when_deps(node_id, spec.when)
        deps = set(data_deps) | when_deps | self._after_deps(node_id, spec.after)
        model = self._model(node_id, spec, node)
        return PlanNode(
            id=node_id,
            type=spec.type,
            node=node,
            inputs=MappingProxyType(inputs),
            data_deps=frozenset(data_deps),
            deps=frozenset(deps),
            when_deps=frozenset(when_deps),
            when=spec.when,
            model=model,
            retry=spec.retry,
            timeout_s=spec.timeout_s,
            cache=spec.cache,
        )

    def _check_inputs(self, node_id: str, node: Node, inputs: dict[str, Any]) -> None:
        ports = node.input_ports()
        for name in sorted(node.required_inputs() - set(inputs)):
            message = (
                f"template variable {name!r} has no input"
                if _accepts_any_input(node)
                else f"required input {name!r} is not wired"
            )
            raise self.fail(message, "nodes", node_id, "inputs", node=node_id)
        for name, value in inputs.items():
            where = ("nodes", node_id, "inputs", name)
            if name not in ports and not _accepts_any_input(node):
                close = difflib.get_close_matches(name, list(ports), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f"; its inputs are {sorted(ports)}"
                raise self.fail(f"node type {node_id!r} has no input {name!r}{hint}", *where, node=node_id)
            target = ports.get(name, PortType("any"))
            self._check_value(node_id, name, value, target, where)

    def _check_value(self, node_id: str, name: str, value: Any, target: PortType, where: tuple[str, ...]) -> None:
        if isinstance(value, list) and target.name == "list" and any(isinstance(v, Ref) for v in value):
            for item in value:
                self._check_value(node_id, name, item, target.item or PortType("any"), where)
            return
        if looks_like_ref(value):
            raise self.fail(
                f"{value!r} is not a valid reference (write $node.port or $inputs.name; $$ for a literal $)", *where
            )
        source = self._type_of(value, where) if isinstance(value, Ref) else type_of_value(value)
        if refs_in(value) and not isinstance(value, Ref):
            return
        if not accepts(target, source):
            what = f"{value} ({source})" if isinstance(value, Ref) else f"literal of type {source}"
            takes = expected(target)
            raise self.fail(f"type mismatch: {what} cannot feed {node_id}.{name} ({takes})", *where, node=node_id)
        if target.name == "messages" and not isinstance(value, Ref):
            self._check_literal(node_id, name, value, target, where)

    def _check_literal(self, node_id: str, name: str, value: Any, target: PortType, where: tuple[str, ...]) -> None:
        """A literal on a typed port whose type says more than its JSON shape (`messages`) is checked whole."""
        try:
            TypeAdapter(target.python()).validate_python(value)
        except ValidationError as err:
            problem = err.errors(include_url=False)[0]
            at = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in problem["loc"])
            message = f"{node_id}.{name} takes {expected(target)}; {name}{at}: {problem['msg']}"
            raise self.fail(message, *where, node=node_id) from None

    def _type_of(self, ref: Ref, where: tuple[str, ...]) -> PortType:
        if ref.node == FLOW_INPUTS:
            if ref.port not in self.input_types:
                raise self.fail(
                    f"{ref} refers to an undeclared flow input; declared: {sorted(self.input_types)}", *where
                )
            return self.input_types[ref.port]
        if ref.node not in self.instances:
            close = difflib.get_close_matches(ref.node, list(self.instances), n=1)
            hint = f"; did you mean ${close[0]}.{ref.port}?" if close else ""
            raise self.fail(f"{ref} refers to a missing node {ref.node!r}{hint}", *where)
        ports = self.instances[ref.node].output_ports()
        if ref.port not in ports:
            raise self.fail(
                f"{ref}: node {ref.node!r} has no output {ref.port!r}; its outputs are {sorted(ports)}", *where
            )
        return ports[ref.port]

    def _when_deps(self, node_id: str, when: str | None) -> set[str]:
        if when is None:
            return set()
        where = ("nodes", node_id, "when")
        try:
            names = templates.expression_names(when)
        except TemplateSyntaxError as err:
            raise self.fail(f"invalid `when` expression: {err.message}", *where, node=node_id) from None
        for name in names - {FLOW_INPUTS}:
            if name not in self.instances:
                raise self.fail(f"`when` reads {name!r}, which is not a node id or `inputs`", *where, node=node_id)
        scope: dict[str, set[str] | None] = {FLOW_INPUTS: set(self.input_types)}
        scope.update({n: set(self.instances[n].output_ports()) for n in names - {FLOW_INPUTS}})
        problem = templates.expression_problem(when, scope)
        if problem:
            raise self.fail(f"`when` {problem}", *where, node=node_id)
        return names - {FLOW_INPUTS}

    def _after_deps(self, node_id: str, after: list[str]) -> set[str]:
        for i, other in enumerate(after):
            if other not in self.instances:
                raise self.fail(f"`after` names a missing node {other!r}", "nodes", node_id, "after", i, node=node_id)
        return set(after)

    def _model(self, node_id: str, spec: NodeSpec, node: Node) -> str | None:
        if not node.uses_model:
            if spec.model is not None:
                raise self.fail(f"node type {spec.type!r} calls no model", "nodes", node_id, "model", node=node_id)
            return None
        alias = spec.model or DEFAULT_MODEL
        if alias not in self.models:
            where = ("nodes", node_id, "model") if spec.model else ("nodes", node_id)
            raise self.fail(f"model alias {alias!r} is not defined under `models:`", *where, node=node_id)
        return alias

    def _output(self, name: str, value: Any) -> Any:
        parsed = parse_value(value)
        for ref in refs_in(parsed):
            self._type_of(ref, ("outputs", name))
        return parsed

    def _order(self, plan_nodes: dict[str, PlanNode]) -> tuple[str, ...]:
        sorter = graphlib.TopologicalSorter({n: p.deps for n, p in plan_nodes.items()})
        try:
            return tuple(sorter.static_order())
        except graphlib.CycleError as err:
            cycle = list(dict.fromkeys(err.args[1]))
            path = " -> ".join([*cycle, cycle[0]])
            raise self.fail(
                f"the graph has a cycle: {path}; use control.loop for repetition", "nodes", cycle[0], node=cycle[0]
            ) from None


def _accepts_any_input(node: Node) -> bool:
    return issubclass(node.Inputs, TemplateInputs)


def _apply_overrides(flow: Flow, overrides: Mapping[str, str]) -> dict[str, ModelSpec]:
    models = dict(flow.spec.models)
    for alias, model in overrides.items():
        if alias in models and models[alias].model == model:
            continue
        from studio.models.scripted import trust_user_models  # loaded only when a model is swapped

        trust_user_models([model])  # the caller's own path; a flow file's stays under the project root
        base = models.get(alias)
        settings = base.model_dump(exclude_unset=True, exclude={"model", "script"}) if base else {}
        models[alias] = ModelSpec.model_validate({**settings, "model": model})
    return models


def compile_flow(flow: Flow, model_overrides: Mapping[str, str] | None = None) -> Plan:
    """Check a flow and return its frozen Plan; raises CompileError naming file, line and field."""
    return _Compiler(flow, model_overrides or {}).compile()


_LOADING: ContextVar[tuple[Path | None, tuple[str, ...]]] = ContextVar("flowstudio_sub_flows", default=(None, ()))
"""The project root and the sub-flow files being compiled, outermost first (a file met again is recursion)."""

_PLANS: dict[tuple[str, ...], Plan] = {}
"""Compiled sub-flows by file and modification time (or inline text): a map over a hundred
items compiles its sub-flow once."""


def load_sub_flow(
    source: str | dict[str, Any], base_dir: Path, caller: str, models: Mapping[str, str] | None = None
) -> Plan:
    """Compile a sub-flow (cached while its file is unchanged); raises FlowError.

    A sub-flow is a path relative to the calling flow's file, or an inline mapping. `models`
    are the run's alias overrides (`--model`): they apply inside sub-flows too, so swapping
    `default` swaps it everywhere in the run.
    """
    overrides = json.dumps(dict(models or {}), sort_keys=True)
    if isinstance(source, str):
        path = _sub_flow_path(source, base_dir)
        key: tuple[str, ...] = (str(path), str(path.stat().st_mtime_ns), overrides)
        if key not in _PLANS:
            with _loading(path, base_dir):
                _PLANS[key] = compile_flow(load_flow(path), models)
        return _PLANS[key]
    text = json.dumps(source, sort_keys=True)
    key = (str(base_dir), text, overrides)
    if key not in _PLANS:
        document = Document(data=source, lines={}, file=f"{caller} (inline flow)")
        _PLANS[key] = compile_flow(parse(document, text, base_dir / "inline.yaml"), models)
    return _PLANS[key]


def _sub_flow_path(source: str, base_dir: Path) -> Path:
    """The sub-flow file, resolved and confined under the project root; raises FlowError."""
    root, _ = _LOADING.get()
    try:
        return paths.confine(base_dir, source, root or paths.project_root(base_dir), "file", "sub-flow")
    except paths.PathRefused as err:
        raise FlowError(str(err), field="flow") from None


@contextmanager
def _loading(path: Path, base_dir: Path) -> Iterator[None]:
    """Mark `path` as being compiled; a sub-flow that leads back to it is refused, naming the chain."""
    root, chain = _LOADING.get()
    if str(path) in chain:
        loop = [*chain[chain.index(str(path)) :], str(path)]
        raise FlowError("sub-flows call each other in a loop: " + " -> ".join(loop), field="flow")
    token = _LOADING.set((root or paths.project_root(base_dir), (*chain, str(path))))
    try:
        yield
    finally:
        _LOADING.reset(token)


def sub_flow_signature(source: str | dict[str, Any], base_dir: Path) -> SubFlowSignature:
    """A sub-flow's input ports, required inputs and output ports, read without running it."""
    plan = load_sub_flow(source, base_dir, "sub-flow")
    outputs: dict[str, PortType] = {}
    for name, value in plan.outputs.items():
        if isinstance(value, Ref):
            node_ports = plan.input_types if value.node == FLOW_INPUTS else plan.nodes[value.node].node.output_ports()
            outputs[name] = node_ports.get(value.port, ANY)
        else:
            outputs[name] = ANY
    required = {name for name, spec in plan.inputs.items() if spec.required}
    return dict(plan.input_types), required, outputs
