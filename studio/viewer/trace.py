"""A run as the viewer sees it: records from the store plus the graph of the flow it ran.

Building a trace reads the store and compiles the stored flow text; it runs nothing.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import TemplateSyntaxError

from studio.errors import FlowError
from studio.flow import templates
from studio.flow.loader import loads
from studio.flow.refs import FLOW_INPUTS, parse_value, refs_in
from studio.flow.spec import NodeSpec, load_flow_text, parse
from studio.runtime.compiler import compile_flow
from studio.store.base import CallRecord, RunRecord, StepRecord, Store
from studio.viewer.names import top_node


@dataclass(frozen=True)
class Wire:
    """One value a node reads: its input `port` comes from `source`'s output `source_port`."""

    port: str
    source: str
    source_port: str


@dataclass(frozen=True)
class GraphNode:
    """A node of the flow's graph."""

    id: str
    type: str
    wires: tuple[Wire, ...] = ()
    """Data wires into this node (flow inputs included, as source `inputs`)."""
    order_deps: frozenset[str] = frozenset()
    """Nodes that must finish first without a data wire (`when` names, `after`)."""

    @property
    def data_deps(self) -> tuple[str, ...]:
        """Upstream nodes whose outputs this node reads, in wire order."""
        return tuple(dict.fromkeys(w.source for w in self.wires if w.source != FLOW_INPUTS))


@dataclass(frozen=True)
class Graph:
    """The flow's nodes in topological order; `problem` says why a graph is partial."""

    nodes: dict[str, GraphNode]
    problem: str | None = None

    def edges(self) -> list[tuple[str, str, bool]]:
        """(source, target, is_data) for every dependency between nodes."""
        found: list[tuple[str, str, bool]] = []
        for node in self.nodes.values():
            found += [(dep, node.id, True) for dep in node.data_deps if dep in self.nodes]
            found += [(dep, node.id, False) for dep in sorted(node.order_deps - set(node.data_deps))]
        return found


@dataclass
class Trace:
    """One run, its steps and model calls, and the graph of its flow."""

    run: RunRecord
    steps: list[StepRecord]
    calls: list[CallRecord]
    graph: Graph
    _by_top: dict[str, list[StepRecord]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for step in self.steps:
            self._by_top.setdefault(top_node(step.node), []).append(step)

    def node_ids(self) -> list[str]:
        """Graph nodes in order, then any node that has steps but is not in the graph."""
        return [*self.graph.nodes, *(n for n in self._by_top if n not in self.graph.nodes)]

    def steps_of(self, node: str) -> list[StepRecord]:
        """Every step recorded for a top-level node, nested ones included, in store order."""
        return self._by_top.get(node, [])

    def step(self, name: str) -> StepRecord | None:
        """The last step recorded under exactly this name."""
        found = [s for s in self._by_top.get(top_node(name), []) if s.node == name]
        return found[-1] if found else None

    def calls_of(self, name: str) -> list[CallRecord]:
        """Model calls made by the step with exactly this name."""
        return [c for c in self.calls if c.node == name]


def seconds(started_at: str, ended_at: str | None) -> float | None:
    """Seconds between two ISO timestamps; None while unfinished."""
    if not ended_at:
        return None
    return (dt.datetime.fromisoformat(ended_at) - dt.datetime.fromisoformat(started_at)).total_seconds()


def load_trace(store: Store, run_id: str) -> Trace | None:
    """Read one run and compile its stored flow text into a graph; None if there is no such run."""
    run = store.get_run(run_id)
    if run is None:
        return None
    steps = store.steps(run_id)
    graph = flow_graph(store.flow_text(run_id), run.flow_path)
    if not graph.nodes:
        graph = Graph({top_node(s.node): GraphNode(top_node(s.node), "?") for s in steps}, graph.problem)
    return Trace(run=run, steps=steps, calls=store.calls(run_id), graph=graph)


@functools.lru_cache(maxsize=64)
def flow_graph(flow_text: str | None, flow_path: str | None = None) -> Graph:
    """The graph of a stored flow: compiled when possible, else read from the spec alone.

    The spec fallback keeps a run viewable when a node type it used is no longer installed.
    Cached by flow text: every run of an unchanged flow shares one graph (compiling a
    500-node flow takes most of a second).
    """
    if not flow_text:
        return Graph({}, "the run has no stored flow text")
    path = Path(flow_path) if flow_path else None
    file = flow_path or "<stored flow>"
    try:
        flow = parse(loads(flow_text, file=file), flow_text, path)
    except FlowError:
        try:
            flow = load_flow_text(flow_text, file=file, path=path)  # the message as the loader words it
        except FlowError as err:
            return Graph({}, f"the stored flow does not load: {err}")
    try:
        plan = compile_flow(flow)
    except FlowError as err:
        return _spec_graph(flow.spec.nodes, f"drawn from the spec only: {err}")
    nodes = {}
    for node_id in plan.order:
        planned = plan.nodes[node_id]
        wires = _wires(dict(planned.inputs))
        nodes[node_id] = GraphNode(node_id, planned.type, wires, frozenset(planned.deps - planned.data_deps))
    return Graph(nodes)


def _wires(inputs: dict[str, object]) -> tuple[Wire, ...]:
    return tuple(Wire(port, ref.node, ref.port) for port, value in inputs.items() for ref in refs_in(value))


def _spec_graph(specs: dict[str, NodeSpec], problem: str) -> Graph:
    nodes = {}
    for node_id, spec in specs.items():
        wires = _wires({name: parse_value(value) for name, value in spec.inputs.items()})
        order = set(spec.after)
        if spec.when:
            with contextlib.suppress(TemplateSyntaxError):  # a broken guard must not hide the rest of the graph
                order |= templates.expression_names(spec.when) - {FLOW_INPUTS}
        nodes[node_id] = GraphNode(node_id, spec.type, wires, frozenset(order & set(specs)))
    return Graph(nodes, problem)
