"""The run's graph as graphviz DOT: nodes colored by status, with cost and time on each."""

from __future__ import annotations

import functools
import re

import graphviz

from studio.viewer.nodes import NodeSummary, Shown, node_summaries
from studio.viewer.trace import Trace

COLORS: dict[Shown, str] = {
    "succeeded": "#c8e6c9",
    "failed": "#ffcdd2",
    "skipped": "#eeeeee",
    "cached": "#bbdefb",
    "reused": "#d1c4e9",
    "waiting": "#fff59d",
    "running": "#ffe0b2",
    "not run": "#ffffff",
}
"""Fill color per shown status; the legend in the app uses the same table."""
_UNSHOWN = re.compile(
    r"<\?xml.*?\?>\n?|<!DOCTYPE.*?>\n?|<!--.*?-->\n?|<title>.*?</title>\n?| (?:id|class)=\"[^\"]*\"", re.S
)
"""What an `<img>` never shows: the prolog, comments, tooltips, element ids and classes."""
_TEXT = {"text-anchor": "middle", "font-family": "Helvetica,sans-Serif", "font-size": "10.00"}
"""The attributes `dot` repeats on every label line; said once on the outer group, they inherit."""


def _label(summary: NodeSummary) -> str:
    lines = [summary.node, f"{summary.type} · {summary.status}"]
    figures = []
    if summary.seconds is not None:
        figures.append(f"{summary.seconds:.2f} s")
    if summary.calls:
        figures.append(f"${summary.cost_usd:.6f}")
    if summary.iterations:
        figures.append(f"{summary.iterations} iterations")
    if figures:
        lines.append("  ".join(figures))
    return "\n".join(lines)


def run_dot(trace: Trace, *, selected: str | None = None, failing: str | None = None, cause: str | None = None) -> str:
    """DOT source of the run's graph; `failing` gets a thick red border, `cause` an orange one."""
    dot = graphviz.Digraph(trace.run.flow)
    dot.attr(rankdir="LR", fontname="Helvetica", fontsize="10")
    dot.attr("node", shape="box", style="rounded,filled", fontname="Helvetica", fontsize="10")
    dot.attr("edge", color="#78909c", arrowsize="0.7")
    for summary in node_summaries(trace):
        extra: dict[str, str] = {}
        if summary.node == cause:
            extra = {"color": "#ef6c00", "penwidth": "3"}
        if summary.node == failing:
            extra = {"color": "#c62828", "penwidth": "3"}
        if summary.node == selected:
            extra.setdefault("penwidth", "2")
            extra["style"] = "rounded,filled,bold"
        if summary.status == "not run":
            extra.setdefault("style", "rounded,dashed")
        dot.node(summary.node, _label(summary), fillcolor=COLORS[summary.status], **extra)
    for source, target, is_data in trace.graph.edges():
        dot.edge(source, target, **({} if is_data else {"style": "dashed"}))
    return str(dot.source)


@functools.lru_cache(maxsize=32)
def dot_svg(source: str) -> str | None:
    """SVG laid out by Graphviz's `dot` (about 0.1 s for 500 nodes, where the browser takes seconds).

    None when the `dot` program is not installed; callers then let the browser lay the graph out.
    Labels hold only node ids, node types, statuses and figures, and Graphviz escapes them.
    """
    try:
        return lean_svg(str(graphviz.Source(source).pipe(format="svg", encoding="utf-8")))
    except (graphviz.ExecutableNotFound, graphviz.CalledProcessError):
        return None


def lean_svg(svg: str) -> str:
    """`dot`'s SVG without what a picture does not show, and its label font said once: about 35%
    fewer bytes for the page to send and the browser to decode (the picture is sent inline)."""
    svg = _UNSHOWN.sub("", svg)
    labels = svg.count("<text ")
    if not all(svg.count(f' {name}="{value}"') == labels for name, value in _TEXT.items()):
        return svg  # labels in more than one font: leave each its own
    for name, value in _TEXT.items():
        svg = svg.replace(f' {name}="{value}"', "")
    shared = " ".join(f'{name}="{value}"' for name, value in _TEXT.items())
    return svg.replace("<g transform", f"<g {shared} transform", 1)
