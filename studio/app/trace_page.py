"""Traces: one run's graph (the canvas, read-only: a click picks the node), time line, failure,
per-node details, cost breakdown and a comparison with another run."""

from __future__ import annotations

import streamlit as st

from studio.app import trace_canvas, trace_parts
from studio.app.resume_panel import waiting_panel
from studio.app.settings import open_store
from studio.app.widgets import duration, ident
from studio.evaluate.blame import blame_of_run
from studio.store.base import RunFilter, RunRecord, Store
from studio.viewer import find_failure, load_trace, parse_step_name, run_dot, seconds, top_node
from studio.viewer.failure import blame
from studio.viewer.trace import Trace

RECENT = 100
TAB = "tab"
"""The tabs' key, and the URL parameter naming the open one."""


def _label(run: RunRecord) -> str:
    return f"{run.run_id} · {run.flow} · {run.status} · {run.started_at[:19].replace('T', ' ')}"


def _pick_run(recent: list[RunRecord], wanted: str | None) -> str | None:
    """The run named in the URL (`?run=ID`), else a choice among the latest runs."""
    labels = {r.run_id: _label(r) for r in recent}
    if wanted and wanted not in labels:
        labels = {wanted: wanted, **labels}
    if not labels:
        return None
    ids = list(labels)
    chosen = st.selectbox("Run", ids, index=ids.index(wanted) if wanted else 0, format_func=labels.__getitem__)
    if chosen != st.query_params.get("run"):
        st.query_params["run"] = chosen
    return chosen


def _header(trace: Trace) -> None:
    run = trace.run
    took = seconds(run.started_at, run.ended_at)
    cells = st.columns(5)
    cells[0].metric("status", run.status)
    cells[1].metric("duration", duration(took))
    cells[2].metric("steps", run.steps)
    cells[3].metric("tokens", run.tokens)
    if run.cost_usd:
        cells[4].metric("cost", f"${run.cost_usd:.6f}")
    else:
        cells[4].metric("cost", "free" if run.tokens else "—", help="no priced model call: see the tokens")
    started = run.started_at[:19].replace("T", " ")
    version = f" · version {ident(run.version[:12])}" if run.version else ""
    st.caption(f"flow {ident(run.flow)} · started {started} UTC · run {ident(run.run_id)}{version}")


def _canvas_key(trace: Trace) -> str:
    return f"trace_canvas_{trace.run.run_id}"


def _clicked(trace: Trace) -> str | None:
    """The node clicked on the canvas since the last rerun, if any (its events are then acknowledged)."""
    key = _canvas_key(trace)
    acked = st.session_state.setdefault(f"{key}_acked", trace_canvas.Acked())
    return trace_canvas.clicked(st.session_state.get(key), acked)


def _timeline_key(trace: Trace) -> str:
    return f"timeline_{trace.run.run_id}"


def _timeline_picked(trace: Trace) -> str | None:
    """The step a click on the time line picked since the last rerun, if any."""
    key = _timeline_key(trace)
    step = trace_parts.timeline_step(st.session_state.get(key))
    fresh = step if step != st.session_state.get(f"{key}_handled") else None
    st.session_state[f"{key}_handled"] = step
    return fresh


def _pick_node(trace: Trace, default: str | None) -> tuple[str, str | None]:
    """The node whose details show: a click on the canvas or the time line, else the "Node" box,
    the URL's `?node=`, the failing node. Second: the step a time-line click picked, if any."""
    nodes = trace.node_ids()
    key = f"node_{trace.run.run_id}"
    step = _timeline_picked(trace)
    clicked = _clicked(trace) or (top_node(step) if step else None)
    if clicked in nodes:
        st.session_state[key] = clicked
        st.session_state[TAB] = "Node"  # a click asks for that node's details
        st.session_state.pop(f"step_{clicked}", None)  # the Step box starts again from the pick
    wanted = st.query_params.get("node")
    start = wanted if wanted in nodes else default if default in nodes else nodes[0]
    chosen = st.selectbox("Node", nodes, index=nodes.index(start), key=key, help="or click a node in the graph")
    if chosen != wanted:
        st.query_params["node"] = chosen
    return str(chosen), step


def _pick_step(trace: Trace, node: str, default: str | None) -> str | None:
    """For a node with sub-flow steps (map items, loop iterations), which of its steps to show."""
    names = list(dict.fromkeys(s.node for s in trace.steps_of(node)))
    if len(names) <= 1:
        return names[0] if names else None
    start = default if default in names else names[0]

    def label(name: str) -> str:
        parsed = parse_step_name(name)
        return f"{parsed.scope} → {parsed.leaf}" if parsed.nested else f"{name} (the node itself)"

    return str(st.selectbox("Step", names, index=names.index(start), format_func=label, key=f"step_{node}"))


def _graph(store: Store, trace: Trace, node: str, failing: str | None, cause: str | None) -> None:
    """The canvas, read-only, when the stored flow can be drawn as the editor draws it; else (and by
    default for a big flow, where the picture is much faster) Graphviz's picture."""
    count = len(trace.graph.nodes)
    interactive = count <= trace_parts.CANVAS_UP_TO or st.toggle(
        f"Interactive graph ({count} nodes: slower to draw)",
        key=f"canvas_on_{trace.run.run_id}",
        help="the editor's canvas, read-only: click a node to see it; off, a picture drawn by Graphviz",
    )
    text = store.flow_text(trace.run.run_id) if interactive else None
    drawn = trace_canvas.drawing(text, trace.run.flow_path) if text else None
    failing_node, cause_node = (top_node(n) if n else None for n in (failing, cause))
    if drawn is not None:
        key = _canvas_key(trace)
        acked = st.session_state.setdefault(f"{key}_acked", trace_canvas.Acked())
        trace_parts.canvas(trace_canvas.trace_graph(drawn, trace, selected=node, acked=acked, cause=cause_node), key)
    else:
        trace_parts.graph(run_dot(trace, selected=node, failing=failing_node, cause=cause_node))
    trace_parts.legend_and_problem(trace)


def _timeline(trace: Trace) -> None:
    """The steps' time line; for a big run one switch away (its chart's script costs a page load about as much as the rest)."""
    count = len(trace.steps)
    if count > trace_parts.CANVAS_UP_TO and not st.toggle(
        f"Time line ({count} steps)", key=f"timeline_on_{trace.run.run_id}", help="which steps ran at the same time"
    ):
        return
    trace_parts.timeline_chart(trace, _timeline_key(trace))


def _tabs(store: Store, trace: Trace, node: str, step: str | None, siblings: list[RunRecord]) -> None:
    """The node's details and three other views, one at a time: only the open tab is drawn (on a
    500-step run the hidden tables and charts were a third of the page), and `?tab=` names it."""
    details, tables, costs, compare = st.tabs(["Node", "All nodes", "Cost", "Compare"], key=TAB, bind="query-params")
    if details.open:
        with details:
            trace_parts.step_panel(trace, _pick_step(trace, node, step))
    if tables.open:
        with tables:
            trace_parts.tables(trace)
    if costs.open:
        with costs:
            trace_parts.cost_panel(trace)
    if compare.open:
        with compare:
            trace_parts.compare_panel(store, trace, siblings)


def render() -> None:
    """The whole page for the run in `?run=`."""
    st.title("Traces")
    with open_store() as store:
        recent = store.query_runs(limit=RECENT)
        run_id = _pick_run(recent, st.query_params.get("run"))
        if run_id is None:
            st.info("No runs yet. Run a flow with `flowstudio run FLOW` or from the Run page.")
            return
        trace = load_trace(store, run_id)
        if trace is None:
            st.error("There is no run with this id in the store.")
            return
        siblings = [r for r in store.query_runs(RunFilter(flow=trace.run.flow), limit=RECENT) if r.run_id != run_id]
        _header(trace)
        trace_parts.run_io(trace)
        waiting_panel(trace)
        failure = find_failure(trace)
        if failure is not None:
            trace_parts.failure_box(failure, trace)
        blamed = blame_of_run(store, run_id)
        if blamed is not None:
            trace_parts.blame_box(blamed)
        failing = failure.step.node if failure and failure.step else None
        cause = failure.cause.node if failure and failure.cause and failure.cause.step else None
        found = blame(trace, failure) if failure is not None else None
        if found is not None and found.where == "settings":
            cause = None  # the upstream nodes were fine: nothing to mark as the cause
        cause = cause or (blamed or {}).get("culprit")
        graph = st.container()
        node, picked = _pick_node(trace, top_node(failing) if failing else None)
        with graph:
            _graph(store, trace, node, failing, cause)
            _timeline(trace)
        _tabs(store, trace, node, picked or failing, siblings)
