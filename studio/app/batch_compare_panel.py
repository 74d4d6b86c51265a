"""On a finished batch: compare it with another finished batch, example by example.

The batch on the page is B; the one chosen under "Compare with" is A (the baseline), so the
headline reads "B against A: W wins, L losses, T ties". The choice is kept in the URL
(`compare=EXPERIMENT_ID`), so a reload shows the same comparison.
"""

from __future__ import annotations

import streamlit as st

from studio.app.links import trace_link
from studio.app.settings import open_store
from studio.app.widgets import ident
from studio.store.base import ExperimentRecord
from studio.viewer.batch_compare import compare_batches, comparison_rows, headline, reading, scored_runs

QUERY = "compare"
"""The URL query parameter holding the batch compared with."""
_NONE = ""


def candidates(experiment: ExperimentRecord, finished: list[ExperimentRecord]) -> list[ExperimentRecord]:
    """The other finished batches: those of the same flow first, each group in list order."""
    others = [e for e in finished if e.kind == "batch" and e.experiment_id != experiment.experiment_id]
    return sorted(others, key=lambda e: e.flow != experiment.flow)


def label(experiment: ExperimentRecord, other: ExperimentRecord) -> str:
    """`ID · flow · created`, marked when its flow or its dataset differs from the page's batch."""
    text = f"{other.experiment_id} · {other.flow} · {other.created_at[:16].replace('T', ' ')}"
    if other.flow != experiment.flow:
        text += " · other flow"
    if other.config.get("data_sha256") != experiment.config.get("data_sha256"):
        text += " · other dataset"
    return text


def render(experiment: ExperimentRecord, finished: list[ExperimentRecord]) -> None:
    """The "Compare with" choice, then the headline, its reading and the example table."""
    others = {e.experiment_id: e for e in candidates(experiment, finished)}
    if not others:
        return
    options = [_NONE, *others]
    wanted = st.query_params.get(QUERY)
    names = {e: label(experiment, o) for e, o in others.items()} | {_NONE: "—"}
    chosen = st.selectbox(
        "Compare with",
        options,
        index=options.index(wanted) if wanted in options else 0,
        format_func=names.__getitem__,
        key=f"compare_with_{experiment.experiment_id}",
        help="Another finished batch: this one (B) against it (A), example by example",
    )
    if chosen != (wanted if wanted in options else _NONE):
        if chosen:
            st.query_params[QUERY] = chosen
        else:
            del st.query_params[QUERY]
    if chosen:
        _comparison(others[chosen], experiment)


def _comparison(a: ExperimentRecord, b: ExperimentRecord) -> None:
    with open_store() as store:
        runs_a, runs_b = store.runs_of_experiment(a.experiment_id), store.runs_of_experiment(b.experiment_id)
    st.markdown(f"A: {ident(a.experiment_id)} (compared with) · B: {ident(b.experiment_id)} (this batch)")
    unscored = [name for name, e, runs in (("A", a, runs_a), ("B", b, runs_b)) if not scored_runs(e, runs)]
    if unscored:
        st.info(f"{' and '.join(unscored)} has no scores (a batch without a metric): nothing to compare.")
        return
    comparison = compare_batches(a, runs_a, b, runs_b)
    st.markdown(f"**{headline(comparison)}**")
    st.caption(reading(comparison))
    rows = comparison_rows(comparison)
    for row in rows:
        for column in ("run A", "run B"):
            row[column] = trace_link(row[column]) if row[column] else None
    trace = {"display_text": r"run=(.+)$", "help": "Open the trace"}
    columns = {
        "score A": st.column_config.NumberColumn("score A", format="%.3f"),
        "score B": st.column_config.NumberColumn("score B", format="%.3f"),
        "run A": st.column_config.LinkColumn("run A", **trace),  # type: ignore[arg-type]
        "run B": st.column_config.LinkColumn("run B", **trace),  # type: ignore[arg-type]
    }
    st.dataframe(rows, hide_index=True, column_config=columns, key="compare_table")
