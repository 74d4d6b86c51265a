"""Node positions on the canvas: the `NAME.layout.yaml` sidecar, and a layout when there is none.

The sidecar keeps positions out of the flow file, so moving a node never shows up in a
review of the flow. Without one, graphviz's `dot` lays the graph out left to right, and a small
flow too wide to read whole at 75% zoom is wrapped like text; a bigger one is cut into rows as wide
as a readable view, read top to bottom (`readable_layout`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

import yaml

from studio.errors import FlowError
from studio.flow.loader import loads

INPUTS = "$inputs"
OUTPUTS = "$outputs"
"""Canvas ids of the flow's inputs and outputs (never valid node ids, so they cannot clash)."""
SPACING = (340.0, 220.0)
"""Horizontal and vertical distance between auto-placed nodes, in canvas pixels."""
DOT_SCALE = 1.6
"""Canvas pixels per graphviz point."""

Position = tuple[float, float]
Layout = dict[str, Position]


def sidecar_path(flow_path: Path) -> Path:
    """`flows/NAME.yaml` → `flows/NAME.layout.yaml`."""
    return flow_path.with_name(f"{flow_path.stem}.layout.yaml")


def read_sidecar(flow_path: Path) -> Layout:
    """Positions saved next to the flow; empty when there is no sidecar (raises FlowError when it is broken)."""
    path = sidecar_path(flow_path)
    if not path.exists():
        return {}
    data = loads(path.read_text(encoding="utf-8"), file=str(path)).data
    nodes = data.get("nodes") if isinstance(data, dict) else None
    if not isinstance(nodes, dict):
        raise FlowError("a layout file needs a `nodes:` mapping of id → {x, y}", file=str(path), line=1)
    layout: Layout = {}
    for node_id, point in nodes.items():
        if isinstance(point, dict) and all(isinstance(point.get(k), (int, float)) for k in ("x", "y")):
            layout[str(node_id)] = (float(point["x"]), float(point["y"]))
    return layout


def sidecar_text(flow_name: str, layout: Mapping[str, Position]) -> str:
    """The sidecar's text: a comment naming the flow, then positions in a stable order."""
    nodes = {node_id: {"x": round(x, 1), "y": round(y, 1)} for node_id, (x, y) in layout.items()}
    body = yaml.safe_dump({"nodes": nodes}, sort_keys=False, default_flow_style=None, width=4096)
    return f"# Canvas positions for {flow_name}.yaml, written by the flowstudio editor.\n{body}"


Size = tuple[float, float]
DEFAULT_SIZE: Size = (276.0, 160.0)
"""A card's width and height in canvas pixels when the caller does not say."""


def auto_layout(
    ids: Iterable[str], edges: Iterable[tuple[str, str]], sizes: Mapping[str, Size] | None = None
) -> Layout:
    """Top-left positions for every id, left to right along the edges (graphviz `dot` with each
    card's size, else columns by depth)."""
    known = tuple(ids)
    measured = tuple((node_id, (sizes or {}).get(node_id, DEFAULT_SIZE)) for node_id in known)
    return dict(_laid_out(known, tuple((a, b) for a, b in edges if a in known and b in known), measured))


@lru_cache(maxsize=64)
def _laid_out(
    ids: tuple[str, ...], edges: tuple[tuple[str, str], ...], sizes: tuple[tuple[str, Size], ...]
) -> tuple[tuple[str, Position], ...]:
    """Memoised: every new session that opens the same sidecar-less flow gets the same layout."""
    try:
        layout = _dot_layout(list(ids), list(edges), dict(sizes))
    except Exception:  # no dot binary, or a graph dot refuses: fall back to columns
        layout = _layered_layout(list(ids), list(edges))
    return tuple(layout.items())


READABLE_VIEW: Size = (1070.0, 900.0)
"""What a 1440x900 window shows of the canvas at 75% zoom with the node list and the side panel
open (a pane of about 880x735 px, less the opening view's margins in frontend/src/fit.ts, 48 px
left and 24 px elsewhere: 1077x916), in canvas pixels."""
WRAP_UP_TO = 15 + 2
"""Flows of up to this many cards (the inputs and outputs included) open whole at a readable zoom, so
their layout is wrapped to fit `READABLE_VIEW`; bigger ones open at a readable zoom on their start,
their layout cut into rows as wide as `READABLE_VIEW` (`in_rows`)."""
COLUMN_GAP = 40.0
CARD_GAP = 32.0
BAND_GAP = 80.0
"""Room between the columns of a band, between the cards of a column, and between one band (or
line) and the next (for the wires back to the left)."""


def readable_layout(
    ids: Iterable[str],
    edges: Iterable[tuple[str, str]],
    sizes: Mapping[str, Size] | None = None,
    rows_width: float = READABLE_VIEW[0],
) -> Layout:
    """`auto_layout`, then for a small flow too big to read whole: wrapped (see `wrapped`); for a
    bigger one too wide to read a line of: in rows as wide as `rows_width` (see `in_rows`; the
    canvas asks for narrower rows when its pane is narrower, as in a 1024 px window)."""
    known = tuple(ids)
    layout = auto_layout(known, edges, sizes)
    measured = {node_id: (sizes or {}).get(node_id, DEFAULT_SIZE) for node_id in known}
    return in_rows(layout, measured, rows_width) if len(known) > WRAP_UP_TO else wrapped(layout, measured)


def _columns(layout: Mapping[str, Position], sizes: Mapping[str, Size]) -> list[list[str]]:
    """The layout's columns, left to right, each top to bottom: a card joins a column when its
    centre is inside the column."""
    columns: list[list[str]] = []
    right = float("-inf")
    for node_id in sorted(layout, key=lambda n: layout[n][0] + sizes[n][0] / 2):
        x, width = layout[node_id][0], sizes[node_id][0]
        if columns and x + width / 2 <= right:
            columns[-1].append(node_id)
            right = max(right, x + width)
        else:
            columns.append([node_id])
            right = x + width
    return [sorted(column, key=lambda n: layout[n][1]) for column in columns]


Placed = tuple[Layout, Size]
"""A layout, and its width and height."""


def _banded(sizes: Mapping[str, Size], columns: list[list[str]], per_band: int) -> Placed:
    """Columns in bands of `per_band`, each band below the last; a column's cards stacked in
    their order, the column centred on the band's tallest (a tucked outputs card hangs below its
    column and is left out of the centring, so the cards it sits under stay in line; it sits at the
    column's left edge, a band gap below, so that the wires into it pass beside and under the cards
    above rather than behind them)."""
    placed: Layout = {}
    top = width = 0.0
    for start in range(0, len(columns), per_band):
        band = columns[start : start + per_band]
        heights = [_stacked(sizes, column[:-1] if _tucks(column) else column) for column in band]
        left, bottom = 0.0, top
        for column, height in zip(band, heights, strict=True):
            column_width = max(sizes[n][0] for n in column)
            y = top + (max(heights) - height) / 2
            for n in column:
                x = left + (column_width - sizes[n][0]) / 2
                if n == OUTPUTS and _tucks(column):  # its wires come down from the cards above
                    x, y = left, y + BAND_GAP - CARD_GAP
                placed[n] = (round(x, 1), round(y, 1))
                y += sizes[n][1] + CARD_GAP
            left += column_width + COLUMN_GAP
            bottom = max(bottom, y - CARD_GAP)
        width = max(width, left - COLUMN_GAP)
        top = bottom + BAND_GAP
    return placed, (width, top - BAND_GAP)


def _stacked(sizes: Mapping[str, Size], column: list[str]) -> float:
    """The height of a column's cards stacked with gaps."""
    return sum(sizes[n][1] for n in column) + CARD_GAP * (len(column) - 1)


def _tucks(column: list[str]) -> bool:
    """Whether the column ends with the flow's outputs under other cards (see `_tucked`)."""
    return len(column) > 1 and column[-1] == OUTPUTS


def _lines(sizes: Mapping[str, Size], columns: list[list[str]], line_width: float) -> Placed:
    """Cards in reading order (column by column), left to right, a new line when one would pass
    `line_width`: the most compact, for flows whose columns do not fit in bands."""
    placed: Layout = {}
    left = top = tallest = width = 0.0
    for n in (n for column in columns for n in column):
        if left > 0 and left + sizes[n][0] > line_width:
            left, top, tallest = 0.0, top + tallest + BAND_GAP, 0.0
        placed[n] = (round(left, 1), round(top, 1))
        width = max(width, left + sizes[n][0])
        tallest = max(tallest, sizes[n][1])
        left += sizes[n][0] + COLUMN_GAP
    return placed, (width, top + tallest)


def _tucked(columns: list[list[str]]) -> list[list[str]]:
    """The columns with a last column of only the flow's outputs put under the column before it, so
    that wrapping never leaves the outputs alone on a band of their own, under the inputs, at the
    end of a wire drawn back across the whole canvas."""
    if len(columns) > 1 and columns[-1] == [OUTPUTS]:
        return [*columns[:-2], [*columns[-2], OUTPUTS]]
    return columns


def wrapped(layout: Mapping[str, Position], sizes: Mapping[str, Size], view: Size = READABLE_VIEW) -> Layout:
    """A left-to-right layout bigger than `view`, wrapped to fit it: its columns cut into bands of
    consecutive columns stacked top to bottom (read like lines of text), the most columns a band
    that fit (the outputs tucked under the last column where that saves a band); else its cards in
    reading order as lines; else whichever shows it biggest. As it is when it fits already."""
    columns = _columns(layout, sizes)
    if not columns:
        return dict(layout)
    left = min(x for x, _ in layout.values())
    top = min(y for _, y in layout.values())
    width = max(x + sizes[n][0] for n, (x, _) in layout.items()) - left
    height = max(y + sizes[n][1] for n, (_, y) in layout.items()) - top
    candidates = [(dict(layout), (width, height))]
    tucked = _tucked(columns)
    for per_band in range(len(columns) - 1, 0, -1):
        if tucked != columns and len(columns) % per_band == 1:  # the outputs would be a band alone
            candidates.append(_banded(sizes, tucked, per_band))
        candidates.append(_banded(sizes, columns, per_band))
    candidates.append(_lines(sizes, columns, view[0]))

    def scale(candidate: Placed) -> float:
        return min(view[0] / max(candidate[1][0], 1.0), view[1] / max(candidate[1][1], 1.0))

    fitting = next((c for c in candidates if scale(c) >= 1), None)
    return (fitting or max(candidates, key=scale))[0]


def in_rows(layout: Mapping[str, Position], sizes: Mapping[str, Size], width: float = READABLE_VIEW[0]) -> Layout:
    """A big flow's left-to-right layout wider than `width`, cut into rows (bands of consecutive
    columns, the most that fit `width`) stacked top to bottom and read like lines of text, so that
    it opens readable on its start and goes on below, not as one long dotted line (the outputs
    tucked under the last column where they would be a row alone). As it is when it fits already."""
    columns = _columns(layout, sizes)
    if (
        not columns
        or max(x + sizes[n][0] for n, (x, _) in layout.items()) - min(x for x, _ in layout.values()) <= width
    ):
        return dict(layout)
    tucked = _tucked(columns)
    for per_band in range(len(columns) - 1, 1, -1):
        placed, (band_width, _) = _banded(sizes, tucked if len(columns) % per_band == 1 else columns, per_band)
        if band_width <= width:
            return placed
    return _banded(sizes, tucked, 1)[0]


def _inches(pixels: float) -> str:
    return f"{pixels / DOT_SCALE / 72:.3f}"


def _dot_layout(ids: list[str], edges: list[tuple[str, str]], sizes: Mapping[str, Size]) -> Layout:
    import graphviz

    graph = graphviz.Digraph(graph_attr={"rankdir": "LR", "nodesep": "0.25", "ranksep": "0.5"})
    names = {node_id: f"n{i}" for i, node_id in enumerate(ids)}
    for node_id in ids:
        width, height = sizes.get(node_id, DEFAULT_SIZE)
        graph.node(names[node_id], shape="box", width=_inches(width), height=_inches(height), fixedsize="true")
    for a, b in edges:
        graph.edge(names[a], names[b])
    placed = json.loads(graph.pipe(format="json"))
    height = float(placed["bb"].split(",")[3])
    by_name = {obj["name"]: obj for obj in placed.get("objects", [])}
    layout: Layout = {}
    for node_id in ids:
        x, y = (float(v) for v in by_name[names[node_id]]["pos"].split(","))  # the card's centre
        width, tall = sizes.get(node_id, DEFAULT_SIZE)
        layout[node_id] = (round(x * DOT_SCALE - width / 2, 1), round((height - y) * DOT_SCALE - tall / 2, 1))
    return layout


def _layered_layout(ids: list[str], edges: list[tuple[str, str]]) -> Layout:
    depth = dict.fromkeys(ids, 0)
    for _ in ids:  # longest path from a source; bounded, so a cycle cannot loop forever
        changed = False
        for a, b in edges:
            if depth[b] < depth[a] + 1 <= len(ids):
                depth[b], changed = depth[a] + 1, True
        if not changed:
            break
    rows: dict[int, int] = {}
    layout: Layout = {}
    for node_id in ids:
        column = depth[node_id]
        row = rows.get(column, 0)
        rows[column] = row + 1
        layout[node_id] = (column * SPACING[0], row * SPACING[1])
    return layout


def free_spot(layout: Mapping[str, Position]) -> Position:
    """Where a node added from the palette goes: right of everything, level with the top."""
    if not layout:
        return (0.0, 0.0)
    right = max(x for x, _ in layout.values())
    top = min(y for _, y in layout.values())
    return (right + SPACING[0], top)
