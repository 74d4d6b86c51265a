"""`now`: the timestamps every run, step and call is recorded with."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from studio.store.base import now

MIDNIGHT = 1_796_515_200_000_000_000
"""2026-12-06T00:00:00Z in nanoseconds."""


@pytest.mark.parametrize(
    "ns",
    [
        MIDNIGHT - 1_000,  # the last microsecond of 2026-12-05
        MIDNIGHT,  # a new day: the date and time of day are formatted again
        MIDNIGHT + 1_999,  # nanoseconds are cut, not rounded
        MIDNIGHT + 61_123_456_789,
    ],
)
def test_now_writes_what_isoformat_writes(monkeypatch: pytest.MonkeyPatch, ns: int) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: ns)
    second, micro = divmod(ns // 1000, 1_000_000)
    expected = dt.datetime.fromtimestamp(second, dt.UTC).replace(microsecond=micro).isoformat(timespec="microseconds")
    assert now() == expected


def test_now_at_a_known_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: MIDNIGHT - 1_000)
    assert now() == "2026-12-05T23:59:59.999999+00:00"


def test_now_is_the_clocks_time() -> None:
    tick = dt.timedelta(microseconds=1)  # either clock reading may be rounded where the other is cut
    before = dt.datetime.now(dt.UTC)
    stamp = dt.datetime.fromisoformat(now())
    assert before - tick <= stamp <= dt.datetime.now(dt.UTC) + tick
