"""What the Experiments page shows of a blame ("Find the culprits"): its progress while it runs, what
it found (examples blamed, culprits named, calls spent) instead of a batch's score cards, the
culprits table with what its numbers mean, and, when its budget reached only some of the failing
examples, the budget that reaches them all, offered as a button."""

from __future__ import annotations

from typing import Any

import streamlit as st

from studio.app import launches
from studio.app.links import trace_link
from studio.app.settings import settings
from studio.app.widgets import RUN_IN_LINK, ident
from studio.evaluate.blame import calls_needed, culprit_rows
from studio.store.base import ExperimentRecord

CULPRITS_MEAN = (
    "**blame**: of the re-runs of the culprit with another version (resampled, other demos, a variant), how many "
    "turned the answer right; **interval**: the range that rate is likely in (few re-runs: wide); **flipped by**: "
    "each kind of re-run, right answers of tries (its model calls); **calls**: model calls this example's blame spent."
)
"""What the culprits table's numbers mean, under it."""
_HELP = {
    "example": "The example's place in the batch's dataset (0 is the first row).",
    "culprit": "The node whose re-runs turned the wrong answer right most often.",
    "blame": "Re-runs of the culprit that gave the right answer, of those tried, for its strongest kind of re-run.",
    "interval": "Where that rate likely lies (95%, Wilson): few re-runs give a wide range.",
    "flipped by": "Each kind of re-run tried on the culprit: right answers / tries (the model calls they made).",
    "calls": "Model calls this example's blame spent (answers served from the cache are free).",
}


def progress_text(p: dict[str, Any]) -> str:
    """`2 of 5 failing examples blamed · 40 of 200 calls`."""
    parts = []
    if "done" in p:
        parts.append(f"{p['done']} of {p.get('total', '?')} failing examples blamed")
    if "calls" in p:
        parts.append(f"{p['calls']} of {p.get('budget_calls', '?')} model calls")
    return " · ".join(parts) or "finding the failing examples"


def summary_text(s: dict[str, Any]) -> str:
    """A finished blame in a few words: `3 of 3 failing examples blamed · culprit answer (3) · 24 calls`."""
    found = s.get("failing_found", s.get("failing", 0))
    parts = [f"{s.get('failing', 0)} of {found} failing examples blamed"]
    culprits = s.get("culprits") or {}
    if culprits:
        parts.append("culprit " + ", ".join(f"{node} ({count})" for node, count in list(culprits.items())[:2]))
    parts.append(f"{s.get('calls', 0)} calls")
    return " · ".join(parts)


def fraction(p: dict[str, Any]) -> float:
    """How far a running blame is: the larger of its examples' and its budget's share."""
    done, total = p.get("done") or 0, p.get("total") or 0
    calls, budget = p.get("calls") or 0, p.get("budget_calls") or 0
    return min(1.0, max(done / total if total else 0.0, calls / budget if budget else 0.0))


def running(blamed: dict[str, Any]) -> None:
    """A batch's blame while it runs: a progress bar that moves with the calls it spends."""
    st.markdown("**Finding the culprits** (re-running each failing example's LLM nodes in other versions)")
    st.progress(fraction(blamed), text=progress_text(blamed))


def header(experiment: ExperimentRecord, *, finished: bool) -> None:
    """A blame's own page: whose answers it looked at, then what it found, as cards."""
    target = str(experiment.config.get("target") or "")
    if target:
        st.markdown(f"The culprits of the wrong answers of batch [{ident(target)}](?experiment={target}).")
    if not finished:
        return
    s = experiment.summary or {}
    blamed, found = int(s.get("failing") or 0), int(s.get("failing_found") or s.get("failing") or 0)
    named = sum(1 for run in (s.get("runs") or {}).values() if run.get("culprit"))
    culprits = s.get("culprits") or {}
    top = next(iter(culprits), None)
    budget = s.get("budget_calls") or experiment.config.get("budget_calls")
    cards = [
        ("Failing examples blamed", f"{blamed} of {found}", "the budget reached these" if blamed < found else None),
        ("Culprits named", f"{named} of {blamed}", "a node whose re-runs turned the answer right"),
        ("Most often to blame", top or "none", f"the culprit of {culprits[top]} example(s)" if top else None),
        ("Model calls", f"{s.get('calls', 0)}" + (f" of {budget}" if budget else ""), "spent on re-runs"),
    ]
    for column, (label, value, note) in zip(st.columns(len(cards)), cards, strict=True):
        column.metric(label, value, help=note)


def culprits(blamed: dict[str, Any]) -> None:
    """The blamed runs, each linking to its trace opened on the likely culprit, the columns explained."""
    if not blamed.get("runs"):
        st.info("No failing example was blamed: its budget ended first, or no example scored below 1.")
        return
    st.markdown("**Likely culprits** (`flowstudio blame`: counterfactual re-runs of each failing example)")
    found = {run["run_id"]: run["culprit"] for run in blamed["runs"].values()}
    rows = culprit_rows(blamed)
    for row in rows:
        row["run"] = trace_link(row["run"], found.get(row["run"]))
    config: dict[str, Any] = {name: st.column_config.Column(name, help=text) for name, text in _HELP.items()}
    config["run"] = st.column_config.LinkColumn(
        "run", display_text=RUN_IN_LINK, help="Open the trace on the likely culprit"
    )
    st.dataframe(rows, hide_index=True, key="blame_table", column_config=config)
    st.caption(CULPRITS_MEAN)


def more_budget(blamed: dict[str, Any], batch: str) -> None:
    """When the budget reached only some failing examples: how many calls reach them all, and a button
    that finds them with that budget (repeated re-runs come from the cache, free)."""
    needed = calls_needed(blamed)
    if needed is None:
        return
    st.warning(
        f"The budget of {blamed.get('budget_calls')} model calls reached {blamed.get('failing')} of the "
        f"{blamed.get('failing_found')} failing examples. Blaming all of them needs about **{needed} calls**.",
        icon=":material/savings:",
    )
    if st.button(f"Find all the culprits with {needed} calls", key="blame_more_budget"):
        launches.start(settings().db, "blame", batch, ["--budget-calls", str(needed)], cwd=settings().flows_dir)
        st.rerun()
