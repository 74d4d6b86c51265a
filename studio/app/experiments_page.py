"""Experiments: batches and optimizer searches, with the table of their examples' runs."""

from __future__ import annotations

import streamlit as st

from studio.app import optimize_panel
from studio.app.settings import open_store
from studio.app.widgets import ident, runs_table
from studio.evaluate.blame import blame_of_experiment, culprit_rows
from studio.store.base import RunFilter
from studio.viewer import example_rows, experiment_rows

LIMIT = 200
EXAMPLES = 1000


def render() -> None:
    """The list of experiments; for the chosen one, its config, summary and examples."""
    st.title("Experiments")
    with open_store() as store:
        experiments = store.list_experiments(limit=LIMIT)
        if not experiments:
            st.info("No experiments yet. `flowstudio batch` records one per dataset run.")
            return
        st.dataframe(experiment_rows(experiments), hide_index=True, key="experiments_table")
        labels = {e.experiment_id: f"{e.experiment_id} · {e.kind} · {e.flow}" for e in experiments}
        wanted = st.query_params.get("experiment")
        ids = list(labels)
        index = ids.index(wanted) if wanted in ids else 0
        chosen = st.selectbox("Experiment", ids, index=index, format_func=labels.__getitem__)
        if chosen != wanted:
            st.query_params["experiment"] = chosen
        experiment = store.get_experiment(chosen)
        where = RunFilter(experiment_id=chosen)
        total = store.count_runs(where)
        runs = list(reversed(store.query_runs(where, limit=EXAMPLES)))
        blamed = blame_of_experiment(store, chosen)
    if experiment is None:
        return
    st.subheader(f"{experiment.kind} of {ident(experiment.flow)}")
    config, summary = st.columns(2)
    with config:
        st.markdown("**Config**")
        st.json(experiment.config, expanded=1)
    with summary:
        st.markdown("**Summary**")
        st.json(experiment.summary or {}, expanded=1)
    if experiment.kind == "optimize":
        optimize_panel.render(experiment.summary or {}, experiment.flow)
    if blamed and blamed.get("runs"):
        st.markdown("**Likely culprits** (`flowstudio blame`: counterfactual re-runs of each failing example)")
        st.dataframe(culprit_rows(blamed), hide_index=True, key="blame_table")
    st.markdown(
        f"**Examples** ({total} run{'s' if total != 1 else ''}{', first ' + str(EXAMPLES) if total > EXAMPLES else ''})"
    )
    score = st.column_config.NumberColumn("score", format="%.3f")
    runs_table(example_rows(experiment, runs), "examples_table", score=score)
