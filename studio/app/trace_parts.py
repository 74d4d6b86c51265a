"""Panels of the Traces page: failure, graph, time line, step details, tables, cost and comparison."""

from __future__ import annotations

from typing import Any

import streamlit as st

from studio.app.canvas import flow_canvas
from studio.app.widgets import duration, ident, legend, money, show_value
from studio.evaluate.blame import flipped_by
from studio.store.base import RunRecord, Store
from studio.viewer import (
    Failure,
    StepDetail,
    compare_rows,
    compare_runs,
    cost_by_model,
    cost_by_node,
    dot_svg,
    load_trace,
    node_rows,
    step_detail,
    step_rows,
    total_cost,
)
from studio.viewer.failure import blame
from studio.viewer.timeline import STATUS_COLORS, chart_rows, most_parallel, timeline
from studio.viewer.trace import Trace

CANVAS_PX = 440
"""The read-only canvas's height on the Traces page."""
CANVAS_UP_TO = 150
"""Flows with more nodes (runs with more steps) are drawn as Graphviz's picture (and without the
time line) unless the user turns the canvas (the time line) on: the 500-step trace must open in
under 2 s (docs/benchmarks.md, Trace viewer)."""
LANE_PX = 22
TIMELINE_MOST_PX = 460
PICKED = "picked"
"""The time line's click selection (a step), as Vega-Lite names it."""


def failure_box(failure: Failure, trace: Trace | None = None) -> None:
    """The failing node, its error, where to look first (matched to the error kind), and the
    nearest upstream node with the values it handed over."""
    with st.container(border=True):
        if failure.step is None:
            st.error("The run failed outside any node.")
            show_value(failure.error)
            return
        kind = f" ({failure.kind})" if failure.kind else ""
        st.error(f"Failing node: {ident(failure.step.node)}{kind}")
        show_value(failure.error)
        found = blame(trace, failure) if trace is not None else None
        if found is not None and found.where == "settings":
            st.markdown(f"**Look first at:** the model settings of {ident(failure.step.node)}")
            st.caption(found.text)
            if failure.upstream:
                st.caption("Its upstream nodes finished normally: " + ", ".join(ident(n) for n in failure.upstream))
            return
        cause = failure.cause
        if cause is None:
            st.caption("No upstream node: nothing fed this node.")
            return
        st.markdown(f"**Nearest upstream cause:** {ident(cause.node)}")
        st.caption(cause.reason)
        show_value(cause.output)
        if len(failure.upstream) > 1:
            st.caption("Also read from: " + ", ".join(ident(n) for n in failure.upstream[1:]))


def blame_box(blamed: dict[str, Any]) -> None:
    """The likely culprit of a wrong answer, from a stored `flowstudio blame`."""
    with st.container(border=True):
        nodes = blamed.get("nodes") or []
        if not blamed.get("culprit"):
            st.info(
                f"Blame found no culprit: no counterfactual node turned the answer right ({blamed['calls']} calls)."
            )
            return
        top = nodes[0]
        kind = top.get("best") or "resample"
        tally = (top.get("kinds") or {}).get(kind) or top
        st.warning(
            f"Likely culprit: {ident(top['node'])}: its {kind} counterfactuals made the answer right in "
            f"{tally['flips']} of {tally['samples']} re-runs (95% {top['low']:.2f}-{top['high']:.2f})"
        )
        st.caption(
            "Counterfactual re-runs (`flowstudio blame`): "
            + ", ".join(f"{ident(n['node'])} {n['flips']}/{n['samples']}" for n in nodes)
            + f"; {blamed['calls']} calls. Of {ident(top['node'])}: {flipped_by(top)}."
        )


def run_io(trace: Trace) -> None:
    """The run's own inputs and outputs (or its error), before anything about its nodes."""
    run = trace.run
    left, right = st.columns(2)
    with left:
        st.markdown("**Inputs**")
        show_value(run.inputs or None)
    with right:
        st.markdown("**Outputs**")
        if run.outputs is None and run.status == "waiting":
            st.caption("— (the run waits for input: see below)")
        elif run.outputs is None and run.error:
            st.caption("— (the run failed: see below)")
        else:
            show_value(run.outputs)


def graph(source: str) -> None:
    """Laid out on the server by `dot` when it is installed (fast for big graphs), else in the browser."""
    svg = dot_svg(source)
    if svg is None:
        st.graphviz_chart(source)
    else:
        st.image(svg, alt="the run's graph, nodes colored by status")


def canvas(graph: dict[str, Any], key: str) -> None:
    """The editor's canvas, read-only: a click on a node comes back under `key` (see trace_canvas.clicked)."""
    flow_canvas(graph, key=key, height=CANVAS_PX, readonly=True)


def timeline_chart(trace: Trace, key: str) -> None:
    """A Gantt chart of the run's steps: steps that ran at the same time are side by side. A click
    on a bar picks its step (the selection comes back under `key`: see `timeline_pick`)."""
    found = timeline(trace)
    if not found:
        st.caption("Time line: no step ran.")
        return
    rows = chart_rows(found)
    lanes = len(dict.fromkeys(r["row"] for r in rows))
    statuses = [s for s in STATUS_COLORS if any(r["status"] == s for r in rows)]
    tooltip = [
        {"field": "step", "title": "node"},
        {"field": "status"},
        {"field": "attempt"},
        {"field": "took", "title": "seconds"},
        {"field": "tokens"},
        {"field": "cost"},
        {"field": "start_s", "title": "started at (s)"},
    ]
    spec = {
        "height": {"step": LANE_PX} if lanes * LANE_PX <= TIMELINE_MOST_PX else TIMELINE_MOST_PX,
        "params": [{"name": PICKED, "select": {"type": "point", "fields": ["step"]}}],
        "mark": {"type": "bar", "cornerRadius": 2, "tooltip": True, "cursor": "pointer"},
        "encoding": {
            "y": {"field": "row", "type": "nominal", "sort": None, "title": None, "axis": {"labelLimit": 200}},
            "x": {"field": "start_s", "type": "quantitative", "title": "seconds from the run's start"},
            "x2": {"field": "shown_end"},
            "color": {
                "field": "status",
                "type": "nominal",
                "scale": {"domain": statuses, "range": [STATUS_COLORS[s] for s in statuses]},
                "legend": {"orient": "top", "title": None},
            },
            "tooltip": tooltip,
        },
    }
    st.vega_lite_chart(rows, spec, width="stretch", on_select="rerun", selection_mode=PICKED, key=key)
    most = most_parallel(found)
    st.caption(
        f"Time line: {len(found)} steps; at most {most} ran at the same time"
        + ("" if rows[0]["row"] == rows[0]["step"] else f" (packed into {lanes} lanes)")
        + "."
    )


def timeline_step(value: Any) -> str | None:
    """The step picked by the last click on the time line (None when none is picked)."""
    picked = ((value or {}).get("selection") or {}).get(PICKED) or []
    step = picked[0].get("step") if picked and isinstance(picked[0], dict) else None
    return str(step) if step else None


def legend_and_problem(trace: Trace) -> None:
    legend()
    if trace.graph.problem:
        st.caption("Graph: " + trace.graph.problem.splitlines()[0])


def _calls(detail: StepDetail) -> None:
    for number, call in enumerate(detail.calls, start=1):
        title = (
            f"Call {number} · {call.model} · {call.input_tokens}+{call.output_tokens} tokens · "
            f"{money(call.cost_usd)} · {call.latency_s:.3f} s{' · cache hit' if call.cache_hit else ''}"
        )
        with st.expander(title, expanded=len(detail.calls) == 1):
            for message in call.messages:
                st.caption(message.role)
                show_value(message.content)
            st.caption("settings")
            st.json(call.settings, expanded=False)
            st.caption("response")
            show_value(call.response, empty="no response")
            if call.error:
                st.caption("error")
                show_value(call.error)


def step_panel(trace: Trace, name: str | None) -> None:
    """Inputs, outputs, prompts, model, tokens, cost, latency, attempts and error of one step."""
    detail = step_detail(trace, name) if name else None
    if detail is None:
        st.info("This node did not run.")
        return
    step = detail.step
    st.markdown(f"**{ident(step.node)}**")
    cells = st.columns(5)
    cells[0].metric("status", step.status)
    cells[1].metric("attempts", step.attempt)
    cells[2].metric("tokens", detail.tokens)
    cells[3].metric("step cost", money(detail.cost_usd) if detail.cost_usd else ("free" if detail.tokens else "—"))
    cells[4].metric("time", duration(detail.seconds))
    models = ", ".join(dict.fromkeys(c.model for c in detail.calls))
    if models:
        st.caption(f"model: {ident(models)}")
    if step.cached or step.reused:
        st.caption("served from the LLM cache" if step.cached else "reused from an earlier run")
    if step.error:
        st.markdown(f"**Error** ({step.error_kind or 'error'})")
        show_value(step.error)
    left, right = st.columns(2)
    with left:
        st.markdown("**Inputs**")
        show_value(step.inputs)
    with right:
        st.markdown("**Outputs**")
        show_value(step.outputs)
    if detail.calls:
        st.markdown("**Model calls**")
        _calls(detail)


def tables(trace: Trace) -> None:
    """Per node, then per step (each map item and loop iteration on its own row)."""
    st.markdown("**Nodes**")
    st.dataframe(node_rows(trace), hide_index=True, key="nodes_table")
    st.markdown("**Steps** (sub-flow steps carry their map item or loop iteration)")
    st.dataframe(step_rows(trace), hide_index=True, key="steps_table")


def cost_panel(trace: Trace) -> None:
    """Bar charts of cost by node and by model; the total is the sum of the model calls. When
    every call was free (the embedded or scripted model) the charts count tokens instead."""
    total = total_cost(trace)
    if not trace.calls:
        st.metric("total of model calls", money(total), help="0 calls")
        st.caption("This run made no model calls.")
        return
    if total == 0:
        tokens = sum(c.input_tokens + c.output_tokens for c in trace.calls)
        st.metric("tokens of model calls", tokens, help=f"{len(trace.calls)} calls, all free: counted in tokens")
        measure = "tokens"
    else:
        st.metric("total of model calls", money(total), help=f"{len(trace.calls)} calls")
        measure = "cost $"
    by_node, by_model = st.columns(2)
    with by_node:
        st.markdown("**By node**")
        rows = [
            {"node": r.key, "cost $": r.cost_usd, "tokens": r.tokens, "calls": r.calls} for r in cost_by_node(trace)
        ]
        _bars(rows, "node", measure)
        st.dataframe(rows, hide_index=True)
    with by_model:
        st.markdown("**By model**")
        rows = [
            {"model": r.key, "cost $": r.cost_usd, "tokens": r.tokens, "calls": r.calls} for r in cost_by_model(trace)
        ]
        _bars(rows, "model", measure)
        st.dataframe(rows, hide_index=True)


def _bars(rows: list[dict[str, Any]], key: str, measure: str) -> None:
    """Horizontal bars of `measure` per `key`, the biggest first (a Vega-Lite spec: `st.bar_chart`
    would import and validate through Altair, most of a second on a page's first visit)."""
    spec = {
        "mark": {"type": "bar", "tooltip": True},
        "encoding": {
            "y": {"field": key, "type": "nominal", "sort": "-x", "title": None, "axis": {"labelLimit": 200}},
            "x": {"field": measure, "type": "quantitative", "title": measure},
        },
    }
    st.vega_lite_chart(rows, spec, width="stretch")


def compare_panel(store: Store, trace: Trace, others: list[RunRecord]) -> None:
    """Node by node against another run of the same flow."""
    if not others:
        st.caption("No other run of this flow to compare with.")
        return
    labels = {r.run_id: f"{r.run_id} · {r.status} · {r.started_at[:19].replace('T', ' ')}" for r in others}
    other_id = st.selectbox("Compare with (B)", list(labels), format_func=labels.__getitem__, key="compare_with")
    other = load_trace(store, other_id)
    if other is None:
        return
    if other.run.flow_hash != trace.run.flow_hash:
        st.caption("The flow file changed between these runs.")
    diffs = compare_runs(trace, other)
    st.dataframe(compare_rows(diffs), hide_index=True, key="compare_table")
    differing = [d.step for d in diffs if d.changed]
    if not differing:
        st.caption("Every step has the same status, inputs, outputs and error.")
        return
    name = st.selectbox("Step that differs", differing, key="compare_step")
    chosen = next(d for d in diffs if d.step == name)
    left, right = st.columns(2)
    for column, title, step in ((left, "A (this run)", chosen.a), (right, "B", chosen.b)):
        with column:
            st.markdown(f"**{title}**")
            if step is None:
                st.caption("no such step")
                continue
            st.caption("inputs")
            show_value(step.inputs)
            st.caption("outputs")
            show_value(step.outputs)
            if step.error:
                st.caption("error")
                show_value(step.error)
