"""History's Promote: `flowstudio promote NAME@ID --tag T --data F --expect OUT=COL` started in the
background (`studio.app.launches`), its two batches' progress, then its verdict with both scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import streamlit as st

from studio.app import launches
from studio.app.launch_forms import METRICS, NONE, columns_of, data_files, mapping_args
from studio.app.settings import open_store, settings
from studio.flow.spec import Flow
from studio.store.base import ExperimentRecord
from studio.versions.refs import short

REFRESH_S = 1.0
KIND = "promote"


def result_of(log: str) -> dict[str, Any] | None:
    """The JSON `promote --json` printed last in its log (None when it printed none)."""
    start = log.rfind("\n{")
    start = start + 1 if start >= 0 else (0 if log.startswith("{") else -1)
    if start < 0:
        return None
    try:
        found = json.loads(log[start:])
    except ValueError:
        return None
    return found if isinstance(found, dict) and "promoted" in found else None


def promote_args(tag: str, data: Path, mapping: list[str], metric: str, min_delta: float) -> list[str]:
    """The command line after `promote NAME@ID`."""
    args = ["--tag", tag, "--data", str(data.resolve()), *mapping]
    if metric != NONE:
        args += ["--metric", metric]
    if min_delta > 0:
        args += ["--min-delta", str(min_delta)]
    return args


def form(flow: Flow, reference: str) -> None:
    """Tag, dataset, columns, metric and margin; Start runs the promotion in its own process."""
    folder = settings().flows_dir
    files = data_files(folder)
    left, right = st.columns(2)
    tag = left.text_input("Tag to move", value="prod", key="promote_tag")
    shown = {str(p): str(p.relative_to(folder)) if p.is_relative_to(folder) else p.name for p in files}
    data = right.selectbox("Dataset", list(shown), format_func=shown.__getitem__, key="promote_data", index=None)
    if data is None:
        st.caption("Pick a dataset (JSONL or CSV in the flows folder) to score both versions on.")
        return
    mapping = mapping_args(flow, columns_of(Path(data)), "promote")
    one, two = st.columns(2)
    metric = one.selectbox("Metric", [*METRICS, NONE], key="promote_metric")
    min_delta = two.number_input(
        "Min delta (0: the score's 95% interval)", min_value=0.0, value=0.0, step=0.05, key="promote_min_delta"
    )
    if "--expect" not in mapping:
        st.caption("Promote needs a score: compare at least one output with a column.")
        return
    if st.button("Promote", type="primary", icon=":material/upgrade:", key="promote_start"):
        args = promote_args(tag.strip(), Path(data), mapping, metric, float(min_delta))
        record = launches.start(settings().db, KIND, reference, args, cwd=folder.resolve())
        st.toast(f"Started promote of {reference} (process {record.pid})")
        st.rerun()


def latest(flow_name: str) -> launches.Launch | None:
    """The newest promotion of this flow started from the studio."""
    found = [x for x in launches.launches(settings().db) if x.kind == KIND and x.flow.startswith(f"{flow_name}@")]
    return found[0] if found else None


def status(flow_name: str) -> None:
    """The newest promotion: its batches while it runs (refreshing), then the verdict."""
    launch = latest(flow_name)
    if launch is None:
        return
    running = launches.alive(launch.pid)
    st.fragment(_status, run_every=REFRESH_S if running else None)(launch, running)


def _status(launch: launches.Launch, was_running: bool) -> None:
    running = launches.alive(launch.pid)
    if was_running and not running:
        st.rerun()  # finished: a full rerun drops the timer and shows the moved tag
    with st.container(border=True, key="promote_status"):
        if running:
            st.markdown(f"**Promoting {launch.flow}** · started {launch.started_at[11:19]} UTC")
            for experiment in _batches(launch):
                _progress(experiment)
            return
        found = result_of(launches.log_tail(launch))
        if found is None:
            st.error(f"Promote of {launch.flow} failed.", icon=":material/error:")
            st.code(launches.log_tail(launch) or "(no output)", language=None, wrap_lines=True)
            return
        _verdict(launch, found)


def _batches(launch: launches.Launch) -> list[ExperimentRecord]:
    with open_store() as store:
        found = store.list_experiments(limit=50, kind="batch")
    return [e for e in reversed(found) if (e.summary or {}).get("launch") == launch.token]


def _progress(experiment: ExperimentRecord) -> None:
    live = launches.progress(experiment)
    version = short(str(experiment.config.get("version") or ""))
    done, total = live.get("done", 0), live.get("total") or 0
    text = f"batch on {version}: {done} of {total} examples"
    st.progress(min(done / total, 1.0) if total else 0.0, text=text)


def _verdict(launch: launches.Launch, found: dict[str, Any]) -> None:
    candidate, current = found["candidate"], found.get("current")
    scores = f"candidate {candidate['version']}: {candidate['score']:.3f}"
    if current:
        scores += f" · {found['tag']} {current['version']}: {current['score']:.3f}"
    if found["promoted"]:
        st.success(f"Promoted: {found['tag']} → {candidate['version']}. {scores}", icon=":material/check_circle:")
    else:
        st.warning(f"Refused: {found['tag']} stays. {scores}", icon=":material/block:")
    st.caption(f"{found['reason']} (started {launch.started_at[:19].replace('T', ' ')} UTC)")
