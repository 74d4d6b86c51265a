"""Runs: every recorded run, filtered by flow, status and date, a page at a time."""

from __future__ import annotations

import streamlit as st

from studio.app.links import trace_page
from studio.app.run_filters import ANY, STATUSES, picked_days
from studio.app.settings import open_store
from studio.app.widgets import runs_table
from studio.viewer import PAGE_SIZE, day_filter, page_count, run_rows


def render() -> None:
    """Filters, the table of one page of runs, and a way into a run's trace."""
    st.title("Runs")
    with open_store() as store:
        flows = store.flow_names()
        by_flow, by_status, by_day = st.columns([2, 2, 3])
        flow = by_flow.selectbox("Flow", [ANY, *flows], key="runs_flow")
        status = by_status.selectbox("Status", [ANY, *STATUSES], key="runs_status")
        first, last = picked_days(by_day.date_input("Started between (UTC)", value=[], key="runs_days"))
        where = day_filter(None if flow == ANY else flow, None if status == ANY else status, first, last)
        total = store.count_runs(where)
        pages = page_count(total)
        page = int(st.number_input(f"Page (of {pages})", 1, pages, 1, key=f"runs_page_{hash(where)}"))
        runs = store.query_runs(where, offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE)
    st.caption(f"{total} run{'s' if total != 1 else ''} match; showing {len(runs)}, newest first.")
    if not runs:
        st.info("No runs yet. Run a flow with `flowstudio run FLOW` or from the Run page.")
        return
    seconds = st.column_config.NumberColumn("seconds", format="%.3f")
    runs_table(run_rows(runs), "runs_table", seconds=seconds)
    labels = {r.run_id: f"{r.run_id} · {r.flow} · {r.status} · {r.started_at[:19].replace('T', ' ')}" for r in runs}
    chosen = st.selectbox("Open a run", list(labels), format_func=labels.__getitem__, key="runs_open")
    st.page_link(trace_page(), label="Open trace", icon=":material/arrow_forward:", query_params={"run": chosen})
