"""The trace viewer's logic, free of Streamlit: what the app and the benchmarks draw and tabulate.

Nothing here executes a flow: a trace is read from the store and its stored flow text is only
compiled, to recover the graph.
"""

from studio.viewer.compare import StepDiff, compare_rows, compare_runs
from studio.viewer.cost import CostRow, cost_by_model, cost_by_node, total_cost
from studio.viewer.detail import CallView, Message, StepDetail, step_detail
from studio.viewer.failure import Cause, Failure, find_failure
from studio.viewer.graph import COLORS, dot_svg, run_dot
from studio.viewer.lists import (
    PAGE_SIZE,
    day_filter,
    example_rows,
    experiment_rows,
    human_seconds,
    page_count,
    run_rows,
    short,
)
from studio.viewer.names import StepName, parse_step_name, top_node
from studio.viewer.nodes import NodeSummary, node_rows, node_summaries, shown_status, step_rows
from studio.viewer.trace import Graph, GraphNode, Trace, Wire, flow_graph, load_trace, seconds

__all__ = [
    "COLORS",
    "PAGE_SIZE",
    "CallView",
    "Cause",
    "CostRow",
    "Failure",
    "Graph",
    "GraphNode",
    "Message",
    "NodeSummary",
    "StepDetail",
    "StepDiff",
    "StepName",
    "Trace",
    "Wire",
    "compare_rows",
    "compare_runs",
    "cost_by_model",
    "cost_by_node",
    "day_filter",
    "dot_svg",
    "example_rows",
    "experiment_rows",
    "find_failure",
    "flow_graph",
    "human_seconds",
    "load_trace",
    "node_rows",
    "node_summaries",
    "page_count",
    "parse_step_name",
    "run_dot",
    "run_rows",
    "seconds",
    "short",
    "shown_status",
    "step_detail",
    "step_rows",
    "top_node",
    "total_cost",
]
