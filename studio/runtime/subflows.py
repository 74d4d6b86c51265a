"""Sub-flows run inside a node (`flow.call`, `control.map`, `control.loop`).

A sub-flow is a path relative to the calling flow's file, or an inline mapping. It is
loaded and compiled under the same rules as any flow; its steps are recorded in the same
run, named under the calling node (`map[2].summarise`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from studio.errors import FlowError, NodeError
from studio.flow import paths
from studio.flow.loader import Document
from studio.flow.refs import FLOW_INPUTS, Ref
from studio.flow.spec import load_flow, parse
from studio.runtime.compiler import Plan, compile_flow
from studio.types import ANY, PortType

if TYPE_CHECKING:
    from studio.runtime.engine import _Graph

MAX_DEPTH = 8


_LOADING: ContextVar[tuple[Path | None, tuple[str, ...]]] = ContextVar("flowstudio_sub_flows", default=(None, ()))
"""The project root and the sub-flow files being compiled, outermost first (a file met again is recursion)."""

_PLANS: dict[tuple[str, ...], Plan] = {}
"""Compiled sub-flows by file and modification time (or inline text): a map over a hundred
items compiles its sub-flow once."""


def load_sub_flow(
    source: str | dict[str, Any], base_dir: Path, caller: str, models: dict[str, str] | None = None
) -> Plan:
    """Compile a sub-flow (cached while its file is unchanged); raises FlowError.

    `models` are the run's alias overrides (`--model`): they apply inside sub-flows too, so
    swapping `default` swaps it everywhere in the run.
    """
    overrides = json.dumps(models or {}, sort_keys=True)
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


class SubFlows:
    """The `ctx.call_flow` of one node."""

    def __init__(self, graph: _Graph, path: str) -> None:
        self.graph = graph
        self.path = path

    async def call(self, flow: str | dict[str, Any], inputs: dict[str, Any], label: str = "") -> dict[str, Any]:
        from studio.runtime.engine import prepare_inputs

        if self.graph.depth >= MAX_DEPTH:
            raise NodeError(
                f"sub-flows nested deeper than {MAX_DEPTH} levels (a flow calling itself?)", kind="bad_flow"
            )
        try:
            caller = f"{self.graph.plan.flow.file}:{self.path}"
            overrides = self.graph.shared.options.models
            plan = load_sub_flow(flow, self.graph.plan.flow.base_dir, caller, overrides)
            values = prepare_inputs(plan, inputs)
        except FlowError as err:
            raise NodeError(f"sub-flow: {err}", kind="bad_input") from None
        prefix = f"{self.path}[{label}]." if label else f"{self.path}."
        return await self.graph.run_child(plan, values, prefix)


def signature(
    source: str | dict[str, Any], base_dir: Path
) -> tuple[dict[str, PortType], set[str], dict[str, PortType]]:
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
