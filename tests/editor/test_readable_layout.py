"""Small flows are laid out to be read whole at 75% zoom in a 1440x900 window (issue #19): a
layout too wide is wrapped into bands of columns, or lines of cards; big flows keep theirs."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from studio.editor.canvas import card_sizes
from studio.editor.editor import Editor
from studio.editor.layout import INPUTS, OUTPUTS, READABLE_VIEW, WRAP_UP_TO, Layout, Size, auto_layout, wrapped
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


def test_big_flows_keep_the_left_to_right_layout(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(big_flow(WRAP_UP_TO - 1), encoding="utf-8")  # with the inputs and outputs, one card too many
    layout, sizes = _opened(path)
    assert _extent(layout, sizes)[0] > 2 * READABLE_VIEW[0]  # fitted whole when opened, not wrapped
    assert layout[INPUTS][0] == min(x for x, _ in layout.values())
    assert layout[OUTPUTS][0] > layout["n0"][0]


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
    assert outputs_y >= classify_y + sizes["classify"][1], "under the last card"
    assert classify_x <= outputs_x < classify_x + sizes["classify"][0], "under the last card, not the inputs"


def test_outputs_that_share_a_band_are_not_tucked() -> None:
    """approve-reply wraps into bands of three and two cards: the outputs already have company on
    the second band, so they stay beside `send`, in reading order, not under it."""
    layout, sizes = _opened(FLOWS / "approve-reply.yaml")
    (send_x, send_y), (outputs_x, outputs_y) = layout["send"], layout[OUTPUTS]
    assert outputs_x >= send_x + sizes["send"][0], "right of send"
    assert outputs_y < send_y + sizes["send"][1] and send_y < outputs_y + sizes[OUTPUTS][1], "on its line"
