"""The trace's time line: steps packed into lanes so that what ran at the same time is side by side."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from studio.runtime.runner import run_flow
from studio.store import SQLiteStore
from studio.store.base import StepRecord
from studio.viewer import load_trace
from studio.viewer.timeline import ROWS_PER_STEP_UP_TO, bars, chart_rows, most_parallel, pack_lanes, timeline

T0 = "2026-12-01T10:00:00+00:00"


def at(seconds: float) -> str:
    """An ISO time `seconds` after T0."""
    whole, part = divmod(round(seconds * 1000), 1000)
    return f"2026-12-01T10:{whole // 60:02d}:{whole % 60:02d}.{part:03d}000+00:00"


def step(node: str, start: float, end: float | None, status: str = "succeeded", **extra: object) -> StepRecord:
    return StepRecord(
        node=node,
        status=status,  # type: ignore[arg-type]
        started_at=at(start),
        ended_at=at(end) if end is not None else "",
        **extra,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("spans", "lanes"),
    [
        pytest.param([], [], id="nothing ran"),
        pytest.param([(0, 1), (1, 2), (2, 3)], [0, 0, 0], id="sequential steps share one lane"),
        pytest.param([(0, 2), (1, 3)], [0, 1], id="overlapping steps take different lanes"),
        pytest.param([(0, 1), (0, 1), (0, 1), (1, 2)], [0, 1, 2, 0], id="fan-out of three, then the join"),
        pytest.param([(0, 10), (1, 2), (3, 4)], [0, 1, 1], id="two short steps beside a long one"),
        pytest.param([(5, 6), (0, 10)], [1, 0], id="given out of order: lanes follow the start times"),
        pytest.param([(1, 1), (1, 1)], [0, 0], id="instants touch, they do not overlap"),
    ],
)
def test_lanes(spans: list[tuple[float, float]], lanes: list[int]) -> None:
    assert pack_lanes(spans) == lanes


def test_no_two_bars_in_one_lane_overlap() -> None:
    spans = [((i * 7) % 11 / 2, (i * 7) % 11 / 2 + 1 + i % 3) for i in range(40)]
    lanes = pack_lanes(spans)
    for lane in set(lanes):
        mine = sorted(s for s, n in zip(spans, lanes, strict=True) if n == lane)
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(mine))
    assert max(lanes) + 1 == max(sum(1 for s in spans if s[0] <= t < s[1]) for t, _ in spans)  # no lane wasted


def test_bars_are_seconds_from_the_runs_start_with_their_figures() -> None:
    found = bars(
        [step("b", 0.5, 2.0, tokens=12, cost_usd=0.25, attempt=2), step("a", 0.0, 1.0)],
        T0,
        at(3),
    )
    assert [(b.step, b.start_s, b.end_s, b.lane) for b in found] == [("a", 0.0, 1.0, 0), ("b", 0.5, 2.0, 1)]
    b = found[1]
    assert (b.attempt, b.tokens, b.cost_usd, b.seconds, b.open) == (2, 12, 0.25, 1.5, False)
    rows = chart_rows(found)
    assert rows[1]["took"] == "1.500 s" and rows[1]["cost"] == "$0.250000" and rows[0]["cost"] == "—"
    assert most_parallel(found) == 2


def test_a_step_without_an_end_runs_to_the_runs_end() -> None:
    found = bars([step("a", 0, 1), step("waiting", 1.5, None, status="waiting")], T0, at(4))
    open_bar = found[1]
    assert (open_bar.open, open_bar.end_s, open_bar.seconds) == (True, 4.0, None)
    assert chart_rows(found)[1]["took"] == "— (no end recorded)"


def test_a_run_without_an_end_draws_open_steps_to_the_latest_known_time() -> None:
    found = bars([step("a", 0, 2), step("b", 1, None, status="running")], T0, None)
    assert (found[1].end_s, found[1].open, found[1].lane) == (2.0, True, 1)


def test_nothing_crashes_on_missing_or_odd_times() -> None:
    broken = StepRecord(node="x", status="succeeded", started_at="not a time", ended_at="")
    naive = StepRecord(node="y", status="succeeded", started_at="2026-12-01T10:00:01", ended_at="2026-12-01T10:00:02")
    skipped = step("z", 0, 0, status="skipped")
    found = bars([broken, naive, skipped], None, None)
    assert [(b.step, b.start_s, b.end_s) for b in found] == [("y", 0.0, 1.0)]  # origin: the earliest start
    assert bars([], T0, None) == [] and chart_rows([]) == [] and most_parallel([]) == 0
    assert bars([broken], T0, "") == []


def test_an_instant_stays_visible_and_many_steps_share_packed_lanes() -> None:
    few = chart_rows(bars([step("a", 0, 0), step("b", 0, 10)], T0, at(10)))
    assert few[0]["shown_end"] > few[0]["start_s"] and few[0]["row"] == "a"  # one named row per step
    many = [step(f"n{i}", i // 2, i // 2 + 1) for i in range(ROWS_PER_STEP_UP_TO + 2)]  # two at a time
    rows = chart_rows(bars(many, T0, None))
    assert {r["row"] for r in rows} == {"lane 1", "lane 2"}


def test_a_real_fan_out_runs_its_branches_side_by_side(tmp_path: Path) -> None:
    flow = tmp_path / "fan.yaml"
    flow.write_text(FAN_OUT, encoding="utf-8")
    db = tmp_path / "runs.db"
    result = run_flow(flow, {"topic": "tea"}, db=db)
    assert result.status == "succeeded", result.error
    store = SQLiteStore(db)
    try:
        trace = load_trace(store, result.run_id)
    finally:
        store.close()
    assert trace is not None
    lanes = {b.step: b.lane for b in timeline(trace)}
    assert lanes["left"] != lanes["right"]  # both waited on the model at the same time
    join = next(b for b in timeline(trace) if b.step == "join")
    assert join.start_s >= max(b.end_s for b in timeline(trace) if b.step in ("left", "right"))


FAN_OUT = """\
flowstudio: 1
name: fan
inputs: {topic: {type: str}}
models:
  default: {model: scripted, script: [{delay_s: 0.2, reply: fine}]}
nodes:
  left: {type: llm.generate, inputs: {t: $inputs.topic}, config: {prompt: "left {{ t }}"}}
  right: {type: llm.generate, inputs: {t: $inputs.topic}, config: {prompt: "right {{ t }}"}}
  join: {type: text.template, inputs: {a: $left.text, b: $right.text}, config: {template: "{{ a }} / {{ b }}"}}
outputs: {text: $join.text}
"""
