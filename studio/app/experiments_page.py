"""Experiments: start a batch or a search, follow it while it runs, stop it, read its results.

Everything shown is read from the store (and the process table) on each run of the page, so
a reload or another browser shows the same state; while something runs the page's body
refreshes itself every second.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from studio.app import batch_compare_panel, blame_panel, launch_forms, launches, optimize_panel
from studio.app.settings import open_store, settings
from studio.app.widgets import ident, runs_table
from studio.evaluate.blame import blame_of_experiment
from studio.store.base import ExperimentRecord, RunFilter, Store
from studio.viewer import experiment_rows
from studio.viewer.results import cards, example_table

LIMIT = 200
EXAMPLES = 1000
REFRESH_S = 1.0
_STATE_BADGES = {
    "starting": "orange",
    "running": "orange",
    "finished": "green",
    "stopped": "gray",
    "failed": "red",
    "unfinished": "gray",
}


def state_badge(state: str) -> str:
    return f":{_STATE_BADGES.get(state, 'gray')}-background[{state}]"


def _states(store: Store) -> tuple[list[ExperimentRecord], dict[str, launches.State], dict[str, launches.Launch]]:
    experiments = store.list_experiments(limit=LIMIT)
    known = launches.by_token(settings().db)
    states = {e.experiment_id: launches.state(e, launches.launch_of(e, known)) for e in experiments}
    return experiments, states, known


def _overview() -> tuple[bool, bool]:
    """Whether anything is running or starting, and whether there is anything at all."""
    with open_store() as store:
        experiments, states, _ = _states(store)
        pending = launches.pending(settings().db, experiments)
    busy = any(s in ("starting", "running") for s in states.values()) or any(s == "starting" for _, s in pending)
    return busy, bool(experiments or pending)


def render() -> None:
    """The start forms (open while there is nothing else to show), then the list and the chosen
    experiment (refreshing while anything runs)."""
    st.title("Experiments")
    busy, anything = _overview()
    launch_forms.render(expanded=not anything)
    st.fragment(_body, run_every=REFRESH_S if busy else None)(busy)


def _body(was_busy: bool) -> None:
    db = settings().db
    with open_store() as store:
        experiments, states, known = _states(store)
        pending = launches.pending(db, experiments)
        _pending(pending)
        if not experiments:
            st.info("No experiments yet. Start a batch above, or run `flowstudio batch` on the command line.")
            return
        rows = experiment_rows(experiments)
        for row, e in zip(rows, experiments, strict=True):
            row["state"] = states[e.experiment_id]
            state = states[e.experiment_id]
            live = state in ("running", "stopped", "failed") and "done" in (e.summary or {})
            row["summary"] = (
                _progress_text(e, eta=state == "running") if live else _summary_text(e) if state == "finished" else ""
            )
            del row["finished"]
        st.dataframe(rows, hide_index=True, key="experiments_table", column_order=_COLUMNS)
        chosen = _choose(experiments, known)
        experiment = store.get_experiment(chosen)
        if experiment is None:
            return
        state = launches.state(experiment, launches.launch_of(experiment, known))
        _header(store, experiment, state, launches.launch_of(experiment, known))
        where = RunFilter(experiment_id=chosen)
        total = store.count_runs(where)
        runs = list(reversed(store.query_runs(where, limit=EXAMPLES)))
        blamed = blame_of_experiment(store, chosen)
    busy = state in ("starting", "running") or any(s in ("starting", "running") for s in states.values())
    if was_busy and not busy:
        st.rerun()  # the last one finished: a full rerun drops the refresh timer
    blaming = blamed is not None and blamed.get("status") == "running"
    if blaming and not launches.alive(blamed.get("pid")):  # type: ignore[union-attr]
        blamed, blaming = None, False  # a blame that died on the way: offer it again
    if experiment.kind == "optimize":
        if state == "finished":
            optimize_panel.render(experiment.summary or {}, experiment.flow)
    elif experiment.kind == "blame":  # no examples of its own: a batch's score cards would read "0 of 0"
        blame_panel.header(experiment, finished=state == "finished")
    else:
        _cards(experiment, runs)
        if state == "finished":
            finished = [e for e in experiments if states[e.experiment_id] == "finished"]
            batch_compare_panel.render(experiment, finished)
    with st.expander("Config and summary (as stored)"):
        config, summary = st.columns(2)
        config.json(experiment.config, expanded=1)
        summary.json(experiment.summary or {}, expanded=1)
    if blaming and experiment.kind == "batch":
        blame_panel.running(blamed or {})
    elif blamed and not blaming:
        blame_panel.culprits(blamed)
        blame_panel.more_budget(blamed, experiment.config.get("target") or chosen)
    elif blamed is None and experiment.kind == "batch" and state == "finished":
        _blame_offer(experiment, blaming=any(launch.flow == chosen and s == "starting" for launch, s in pending))
    if experiment.kind == "blame":
        return
    more = f", first {EXAMPLES}" if total > EXAMPLES else ""
    st.markdown(f"**Examples** ({total} run{'s' if total != 1 else ''}{more}; failures first)")
    score = st.column_config.NumberColumn("score", format="%.3f")
    runs_table(example_table(experiment, runs), "examples_table", score=score)


_COLUMNS = ["experiment", "state", "kind", "flow", "summary", "created"]


def _blame_offer(experiment: ExperimentRecord, *, blaming: bool) -> None:
    """For a finished batch with wrong answers and no blame yet: a button that finds their culprits
    (`flowstudio blame` in the background; the table shows here when it is done), and its command."""
    scores = (experiment.summary or {}).get("scores")
    wrong = [s for s in scores.values() if isinstance(s, int | float) and s < 1] if isinstance(scores, dict) else []
    if not wrong or blaming:
        return
    st.info(
        f"{len(wrong)} example{'s' if len(wrong) != 1 else ''} scored below 1. **Find the culprits** re-runs each "
        "LLM node of those examples in other versions, upstream from the cache, and names the node most likely to "
        f"blame, as `flowstudio blame {experiment.experiment_id} --db {_shown(settings().db)}` does. The culprits then "
        "show here and on each trace."
    )
    if st.button("Find the culprits", key="start_blame"):
        launches.start(settings().db, "blame", experiment.experiment_id, [], cwd=settings().flows_dir)
        st.rerun()


def _shown(db: Path | str) -> str:
    """The store as the page may show it: a PostgreSQL URL without its password."""
    if isinstance(db, str) and "://" in db:
        from studio.store.postgres import shown_url

        return shown_url(db)
    return str(db)


def _choose(experiments: list[ExperimentRecord], known: dict[str, launches.Launch]) -> str:
    """The experiment in the URL; right after a start, the started one as soon as it exists."""
    labels = {e.experiment_id: f"{e.experiment_id} · {e.kind} · {e.flow}" for e in experiments}
    ids = list(labels)
    wanted = st.query_params.get("experiment")
    token = st.query_params.get("launch")
    waiting = False
    if token:
        started = next((e.experiment_id for e in experiments if (e.summary or {}).get("launch") == token), None)
        launch = known.get(token)
        if started is not None or launch is None or not launches.alive(launch.pid):
            wanted = started or wanted
            del st.query_params["launch"]
        else:
            waiting = True  # its experiment does not exist yet: pin nothing until it does
    index = ids.index(wanted) if wanted in ids else 0
    chosen = st.selectbox("Experiment", ids, index=index, format_func=labels.__getitem__)
    if not waiting and chosen != st.query_params.get("experiment"):
        st.query_params["experiment"] = chosen
    return str(chosen)


def _progress_text(experiment: ExperimentRecord, *, eta: bool = True) -> str:
    p = launches.progress(experiment)
    parts = []
    if experiment.kind == "optimize":
        if "calls" in p:
            parts.append(f"{p['calls']} of {p.get('budget_calls', '?')} calls")
        if "best_dev" in p:
            parts.append(f"best {p['best_dev']:.3f}")
    elif experiment.kind == "blame":
        return blame_panel.progress_text(p)
    else:
        if "done" in p:
            parts.append(f"{p['done']} of {p.get('total', '?')} examples")
        if "score" in p:
            parts.append(f"score {p['score']:.3f}")
    if eta and "eta_s" in p and experiment.kind != "optimize":
        parts.append(f"ETA {p['eta_s']:.0f} s")
    return " · ".join(parts) or "starting"


def _summary_text(experiment: ExperimentRecord) -> str:
    """A finished experiment in a few words (the full summary is under "Config and summary")."""
    s = experiment.summary or {}
    if experiment.kind == "blame":
        return blame_panel.summary_text(s)
    parts = []
    if isinstance(s.get("score"), int | float):
        parts.append(f"score {s['score']:.3f}")
    if isinstance(s.get("best_dev"), int | float):
        parts.append(f"best dev {s['best_dev']:.3f}")
    if "errors" in s:
        parts.append(f"{s['errors']} errors of {s.get('examples', '?')}")
    if "calls" in s:
        parts.append(f"{s['calls']} calls")
    if s.get("cost_usd"):
        parts.append(f"${s['cost_usd']:.6f}")
    elif s.get("tokens"):
        parts.append(f"{s['tokens']} tokens")
    return " · ".join(parts)


def _header(store: Store, experiment: ExperimentRecord, state: str, launch: launches.Launch | None) -> None:
    st.subheader(f"{experiment.kind} of {ident(experiment.flow)}")
    st.markdown(
        f"{state_badge(state)} · experiment {ident(experiment.experiment_id)} · {experiment.created_at[:19].replace('T', ' ')}"
    )
    if state in ("starting", "running"):
        p = launches.progress(experiment)
        done, total = p.get("done", 0), p.get("total") or 0
        share = blame_panel.fraction(p) if experiment.kind == "blame" else min(1.0, done / total) if total else 0.0
        st.progress(share, text=_progress_text(experiment))
        if st.button("Stop", key="stop_experiment", help="Stop its process; finished examples stay recorded"):
            launches.cancel(store, experiment, launch)
            st.rerun()
    elif state == "failed" and launch is not None:
        st.error("The process ended without finishing. Its last output:")
        st.code(launches.log_tail(launch) or "(no output)", language=None)
    elif state == "stopped":
        st.info("Stopped before the end: the examples below finished; `flowstudio batch --resume "
                f"{experiment.experiment_id}` continues a batch.")  # fmt: skip


def _cards(experiment: ExperimentRecord, runs: list[Any]) -> None:
    columns = st.columns(6)
    for column, (label, value, note) in zip(columns, cards(experiment, runs), strict=True):
        column.metric(label, value, help=note)
        if note:
            column.caption(note)


def _pending(pending: list[tuple[launches.Launch, launches.State]]) -> None:
    for launch, state in pending[:5]:
        if state == "starting" and launch.kind == "blame":
            st.info(f"Finding the culprits of {launch.flow}'s wrong answers (process {launch.pid})…")
        elif state == "starting":
            st.info(f"Starting {launch.kind} of {launch.flow} (process {launch.pid})…")
        elif launches.budget_refusal(launch) is not None:
            _budget_refused(launch, *launches.budget_refusal(launch))  # type: ignore[misc]
        else:
            with st.expander(f":red[{launch.kind} of {launch.flow} did not start] · {launch.started_at[:19]}"):
                st.code(launches.log_tail(launch) or "(no output)", language=None)


def _budget_refused(launch: launches.Launch, given: int, needed: int) -> None:
    """A search refused for its budget, in words, with a button that starts it again with enough."""
    st.error(
        f"The search of {Path(launch.flow).name} did not start: a budget of {given} model "
        f"call{'s' if given != 1 else ''} is too small "
        f"to try even one candidate. It needs about **{needed} calls**: the flow on every dev example, then one "
        "candidate on all of them.",
        icon=":material/block:",
    )
    if st.button(f"Start it with {needed} calls", key=f"rebudget_{launch.token}", type="primary"):
        db = settings().db
        args = launches.with_budget(launches.args_of(launch), needed)
        record = launches.start(db, launch.kind, launch.flow, args, cwd=settings().flows_dir)
        launches.forget(db, launch)
        st.query_params.pop("experiment", None)
        st.query_params["launch"] = record.token
        st.rerun()
