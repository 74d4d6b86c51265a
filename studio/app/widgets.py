"""Small pieces every page uses. Stored text is shown as text: nothing from a trace renders as HTML."""

from __future__ import annotations

from typing import Any

import streamlit as st

from studio.app.links import reviews_page, trace_link
from studio.reviews.counts import ReviewCounts
from studio.viewer import human_seconds

_BADGES = {
    "succeeded": "green",
    "failed": "red",
    "skipped": "gray",
    "cached": "blue",
    "reused": "violet",
    "waiting": "yellow",
    "running": "orange",
    "not run": "gray",
}
"""Streamlit color names close to the graph's fill colors (`studio.viewer.COLORS`)."""


def show_value(value: Any, *, empty: str = "—") -> None:
    """A stored value: strings verbatim in a code block, anything else as JSON."""
    if value is None:
        st.caption(empty)
    elif isinstance(value, str):
        st.code(value, language=None, wrap_lines=True)
    else:
        st.json(value, expanded=2)


def ident(name: str) -> str:
    """A node or run id as inline code in markdown (a stray backtick cannot end it early)."""
    return "`" + name.replace("`", "'") + "`"


def money(value: float) -> str:
    """A cost in dollars, to the millionth (a call to a small model costs less than a cent)."""
    return f"${value:.6f}"


def duration(value: float | None) -> str:
    """A duration for people (`human_seconds`)."""
    return human_seconds(value)


def badge(status: str) -> str:
    """Markdown for a status in its color (statuses are fixed words, never stored free text)."""
    color = _BADGES.get(status)
    return f":{color}-background[{status}]" if color else status


def legend() -> None:
    """The colors of the graph, in words."""
    st.markdown(" ".join(badge(status) for status in _BADGES))


RUN_IN_LINK = r"run=([^&]+)"
"""What a trace link column shows: the run id out of `traces?run=ID[&node=NODE]`."""


def runs_table(rows: list[dict[str, Any]], key: str, **columns: Any) -> None:
    """A table of runs whose `run` column links to each trace; `columns` adds column settings."""
    for row in rows:
        row["run"] = trace_link(row["run"])
    settings = {
        "run": st.column_config.LinkColumn("run", display_text=RUN_IN_LINK, help="Open the trace"),
        "cost_usd": st.column_config.NumberColumn("cost $", format="%.6f"),
        **columns,
    }
    st.dataframe(rows, hide_index=True, column_config=settings, key=key)


def reviews_link(flow: str, counts: ReviewCounts) -> None:
    """A link into the Reviews queue of `flow`, saying how many of its runs are reviewed (Home's cards)."""
    said = f"{counts.reviewed} reviewed · {counts.good} good, {counts.bad} bad" if counts.reviewed else "none reviewed"
    st.page_link(reviews_page(), label=f"Reviews: {said}", icon=":material/rate_review:", query_params={"flow": flow})
