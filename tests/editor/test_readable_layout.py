"""Small flows are laid out to be read whole at 75% zoom in a 1440x900 window (issue #19): a
layout too wide is wrapped into bands of columns, or lines of cards; big flows are cut into rows
as wide as that view, to be read from their start (issue 38)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from studio.editor.canvas import card_sizes
from studio.editor.editor import Editor
from studio.editor.layout import (
    BAND_GAP,
    INPUTS,
    OUTPUTS,
    READABLE_VIEW,
    WRAP_UP_TO,
    Layout,
    Size,
    auto_layout,
    wrapped,
)
from tests.app.editor_browser import big_flow, chain_flow
from tests.conftest import FLOWS


def _extent(layout: Layout, sizes: dict[str, Size]) -> Size:
    left = min(x for x, _ in layout.values())
    top = min(y for _, y in layout.values())
    right = max(x + sizes[n][0] for n, (x, _) in layout.items())
    bottom = max(y + sizes[n][1] for n, (_, y) in layout.items())
    return right - left, bottom - top


def _overlap(a: tuple[float, float, Size], b: tuple[float, float, Size]) -> bool:
    (ax, ay, (aw, ah)), (bx, by, (bw, bh)) = a, b
    return ax < bx + bw and bx < ax + aw and ay < by + bh and by < ay + ah


def _opened(path: Path) -> tuple[Layout, dict[str, Size]]:
    editor = Editor(path)
    return editor.layout, card_sizes(editor.flow)


@pytest.mark.parametrize("name", sorted(p.name for p in FLOWS.glob("*.yaml")))
def test_every_example_flow_fits_the_readable_view(name: str) -> None:
    layout, sizes = _opened(FLOWS / name)
    width, height = _extent(layout, sizes)
    assert width <= READABLE_VIEW[0] and height <= READABLE_VIEW[1], (name, width, height)


@pytest.mark.parametrize("nodes", [6, 10])
def test_a_chain_is_wrapped_into_lines_read_left_to_right_then_down(tmp_path: Path, nodes: int) -> None:
    path = tmp_path / "chain.yaml"
    path.write_text(chain_flow(nodes), encoding="utf-8")
    layout, sizes = _opened(path)
    width, height = _extent(layout, sizes)
    assert width <= READABLE_VIEW[0] and height <= READABLE_VIEW[1], (width, height)
    cards = [(x, y, sizes[n]) for n, (x, y) in layout.items()]
    assert not any(_overlap(a, b) for a, b in itertools.combinations(cards, 2))
    order = [INPUTS, *(f"c{i}" for i in range(nodes)), OUTPUTS]
    for before, after in itertools.pairwise(order):  # each next card right of it on its line, or on a line below
        (bx, by), (ax, ay) = layout[before], layout[after]
        assert ax > bx or ay >= by + sizes[before][1], (before, after)
    assert len({y for _, y in layout.values()}) > 1  # wrapped: more than one line


def test_a_layout_that_fits_is_kept_as_it_is() -> None:
    sizes = {n: (200.0, 100.0) for n in ("a", "b", "c")}
    layout = auto_layout(["a", "b", "c"], [("a", "b"), ("b", "c")], sizes)
    assert wrapped(layout, sizes) == layout


@pytest.mark.parametrize("flow", [chain_flow, big_flow])
def test_big_flows_are_cut_into_rows_as_wide_as_the_readable_view(tmp_path: Path, flow: Callable[[int], str]) -> None:
    """Past `WRAP_UP_TO` cards a flow no longer opens whole: its left-to-right layout is cut into
    rows that fit the readable view's width (issue 38: a 200-node chain opened as a dotted line),
    read left to right then down, the inputs first, no card on another."""
    path = tmp_path / "big.yaml"
    path.write_text(flow(200), encoding="utf-8")
    layout, sizes = _opened(path)
    width, height = _extent(layout, sizes)
    assert width <= READABLE_VIEW[0] < height, (width, height)
    assert layout[INPUTS] == (min(x for x, _ in layout.values()), min(y for _, y in layout.values()))
    cards = sorted((x, y, sizes[n]) for n, (x, y) in layout.items())
    assert not any(_overlap(a, b) for a, b in itertools.pairwise(cards))
    assert not any(_overlap(a, b) for a, b in itertools.combinations(cards[:40], 2))
    if flow is chain_flow:
        order = [INPUTS, *(f"c{i}" for i in range(200)), OUTPUTS]
        for before, after in itertools.pairwise(order):  # each next card right of it on its row, or on a row below
            (bx, by), (ax, ay) = layout[before], layout[after]
            assert ax > bx or ay >= by + sizes[before][1], (before, after)


def test_a_flow_just_past_the_small_ones_is_in_rows_too(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(chain_flow(WRAP_UP_TO - 1), encoding="utf-8")  # with the inputs and outputs, one card too many
    layout, sizes = _opened(path)
    assert _extent(layout, sizes)[0] <= READABLE_VIEW[0]
    assert layout[OUTPUTS][1] > layout["c0"][1]


def test_a_wrap_tucks_the_outputs_under_the_last_card_instead_of_a_band_of_their_own() -> None:
    """`ticket` (inputs, two wide LLM cards, outputs) is too wide for one line: the outputs go under
    the last card, not alone on a second band under the inputs at the end of a wire drawn back
    across the canvas; the cards they hang under stay in line."""
    layout, sizes = _opened(Path(__file__).parents[2] / "bench" / "flows" / "ticket.yaml")
    width, height = _extent(layout, sizes)
    assert width <= READABLE_VIEW[0] and height <= READABLE_VIEW[1], (width, height)
    (inputs_x, _), (words_x, words_y), (classify_x, classify_y) = (layout[n] for n in (INPUTS, "words", "classify"))
    assert inputs_x < words_x < classify_x, "one line, read left to right"
    assert abs(classify_y + sizes["classify"][1] / 2 - (words_y + sizes["words"][1] / 2)) < 1, "in line"
    outputs_x, outputs_y = layout[OUTPUTS]
    assert outputs_y >= classify_y + sizes["classify"][1] + BAND_GAP, "under the last card, with room for wires"
    assert outputs_x == classify_x, "at its left edge: a wire from the left comes down beside it, not behind it"


def test_outputs_that_share_a_band_are_not_tucked() -> None:
    """approve-reply wraps into bands of three and two cards: the outputs already have company on
    the second band, so they stay beside `send`, in reading order, not under it."""
    layout, sizes = _opened(FLOWS / "approve-reply.yaml")
    (send_x, send_y), (outputs_x, outputs_y) = layout["send"], layout[OUTPUTS]
    assert outputs_x >= send_x + sizes["send"][0], "right of send"
    assert outputs_y < send_y + sizes["send"][1] and send_y < outputs_y + sizes[OUTPUTS][1], "on its line"


def test_a_narrow_pane_lays_a_big_flow_out_again_in_narrower_rows_only_as_it_opened(tmp_path: Path) -> None:
    """The canvas asks for rows as wide as its pane (a 1024 px window): the flow is laid out again,
    not edited (nothing to save, nothing to undo); once edited, or from a layout file, it is kept."""
    path = tmp_path / "chain.yaml"
    path.write_text(chain_flow(60), encoding="utf-8")
    editor = Editor(path)
    editor.apply({"kind": "rows", "width": 640})
    assert editor.version == 2 and not editor.dirty and not editor.history.can_undo
    assert max(x for x, _ in editor.layout.values()) < 640 < READABLE_VIEW[0]
    narrow = dict(editor.layout)
    editor.apply({"kind": "rows", "width": 1000})  # asked once per open: a later ask changes nothing
    assert editor.layout == narrow and editor.version == 2

    editor = Editor(path)
    editor.move({"c0": (5.0, 5.0)})
    editor.apply({"kind": "rows", "width": 640})
    assert editor.layout["c0"] == (5.0, 5.0) and editor.version == 1
