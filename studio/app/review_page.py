"""Reviews: the queue of runs waiting for a review, one run at a time (inputs, outputs edited in
place, a comment), good / bad / skip by key, and the flow's reviewed runs exported as a dataset.

Saving goes through `studio.reviews.feedback.review` and the export through
`studio.reviews.dataset.reviewed_rows`, as `flowstudio review` and `dataset from-reviews` do.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, cast

import streamlit as st

from studio.app.links import trace_link
from studio.app.run_filters import ANY, STATUSES, picked_days
from studio.app.settings import open_store, settings
from studio.app.widgets import badge, ident, runs_table, show_value
from studio.errors import InputError
from studio.flow.paths import PathRefused, confine
from studio.reviews.counts import review_counts
from studio.reviews.dataset import reviewed_rows, write_jsonl
from studio.reviews.edits import as_text, correction
from studio.reviews.feedback import Verdict, flow_parts, review
from studio.reviews.queue import RULES, QueueItem, review_queue
from studio.store.base import RunFilter, RunRecord, Store
from studio.store.feedback import FeedbackStore
from studio.versions.history import account_name
from studio.viewer import day_filter

SKIPPED = "review_skipped"
"""Session state: the runs skipped, in the order they were (they wait at the back of the queue)."""
DONE = "review_done"
"""Session state: the runs reviewed in this session (a second key press on the same run is ignored)."""
LAST = "review_last"
"""Session state: what the last save said, shown above the next run."""
EXPORTED = "review_exported"
"""Session state: the last export (its path and rows)."""
NO_NODE = "(none)"
UP_NEXT = 10
"""How many of the waiting runs the table below the form lists."""

ESCAPE = """
<script>
if (!window.flowstudioReviewEscape) {
  window.flowstudioReviewEscape = true;
  document.addEventListener("keydown", (event) => {
    const field = event.target;
    if (event.key === "Escape" && field instanceof HTMLElement && field.closest(".st-key-review_form")
        && (field.tagName === "TEXTAREA" || field.tagName === "INPUT")) {
      field.blur();
    }
  }, true);
}
</script>
"""
"""Fixed script: Escape leaves a text field of the review form (which keeps what was typed), so
the next key is a shortcut (G, B, S) again."""


def _version_label(store: Any, flow: str) -> dict[str, str]:
    """Version id → `id · tags · date`, newest first."""
    tags: dict[str, list[str]] = {}
    for tag in store.list_tags(flow):
        tags.setdefault(tag.version_id, []).append(tag.tag)
    versions = sorted(store.list_versions(flow), key=lambda v: v.created_at, reverse=True)
    return {
        v.version_id: " · ".join([v.version_id[:12], *sorted(tags.get(v.version_id, [])), v.created_at[:10]])
        for v in versions
    }


def _filters(store: Store) -> tuple[RunFilter, str, str | None]:
    """The filter row: flow, version, status, days, rule; returns (filter, rule, flow or None)."""
    flows = store.flow_names()
    wanted = st.query_params.get("flow")
    by_flow, by_version, by_status, by_day, by_rule = st.columns([2, 2, 1.5, 2.5, 2])
    start = flows.index(wanted) + 1 if wanted in flows else 0
    flow = by_flow.selectbox("Flow", [ANY, *flows], index=start, key="review_flow")
    labels = _version_label(store, flow) if flow != ANY else {}
    version = by_version.selectbox(
        "Version", [ANY, *labels], format_func=lambda v: labels.get(v, v), key="review_version", disabled=not labels
    )
    status = by_status.selectbox("Status", [ANY, *STATUSES], key="review_status")
    first, last = picked_days(by_day.date_input("Started between (UTC)", value=[], key="review_days"))
    rule = by_rule.selectbox("Needs review", RULES, key="review_rule", help=_RULE_HELP)
    where = day_filter(None if flow == ANY else flow, None if status == ANY else status, first, last)
    where = dataclasses.replace(where, version=None if version == ANY else version)
    return where, rule, None if flow == ANY else flow


_RULE_HELP = (
    "Which unreviewed runs wait here: failed runs, a step with low confidence, samples of a step that "
    "disagree, a random share of the rest (any rule), or all unreviewed runs."
)


def _ordered(items: list[QueueItem]) -> list[QueueItem]:
    """The queue with this session's skipped runs at the back, in the order they were skipped."""
    skipped: list[str] = st.session_state.get(SKIPPED, [])
    back = {run_id: n for n, run_id in enumerate(skipped)}
    return sorted(items, key=lambda item: (item.run.run_id in back, back.get(item.run.run_id, 0)))


def _skip(run_id: str) -> None:
    skipped = [r for r in st.session_state.get(SKIPPED, []) if r != run_id]
    st.session_state[SKIPPED] = [*skipped, run_id]
    st.session_state[LAST] = ("info", f"Skipped {run_id}: it waits at the back of the queue.")


def _save(run: RunRecord, names: list[str], verdict: Verdict) -> None:
    """Store the review the form holds (the same function `flowstudio review` calls)."""
    done: set[str] = st.session_state.setdefault(DONE, set())
    if run.run_id in done:
        return
    state = st.session_state
    try:
        edited = {name: str(state.get(_output_key(run.run_id, name), "")) for name in names}
        fixed = correction(run.outputs or {}, edited)
        node = state.get(f"review_node_{run.run_id}")
        with open_store() as store:
            review(
                cast(FeedbackStore, store), run.run_id, verdict=verdict, correction=fixed or None,
                comment=str(state.get(f"review_comment_{run.run_id}") or "").strip() or None,
                author=account_name(), node=None if node in (None, NO_NODE) else node,
            )  # fmt: skip
    except InputError as err:
        state[LAST] = ("error", f"{err.field}: {err.message}" if err.field else err.message)
        return
    done.add(run.run_id)
    corrected = f", corrected {', '.join(fixed)}" if fixed else ""
    state[LAST] = ("success", f"Reviewed {run.run_id}: {verdict}{corrected}.")


def _output_key(run_id: str, name: str) -> str:
    return f"review_out_{run_id}_{name}"


def _height(text: str) -> int:
    """A text area tall enough for its text, within reason (pixels)."""
    lines = sum(1 + len(line) // 70 for line in text.splitlines()) or 1
    return min(240, max(68, 24 * lines + 20))


def _last_message() -> None:
    last = st.session_state.pop(LAST, None)
    if last is not None:
        kind, text = last
        {"success": st.success, "error": st.error}.get(kind, st.info)(text)


def _form(store: Any, item: QueueItem) -> None:
    """One run: what it was given, what it answered (editable), a comment, a node; good / bad / skip."""
    run = item.run
    outputs, nodes = flow_parts(store, run)
    names = outputs or list(run.outputs or {})
    with st.container(border=True, key="review_form"):
        head, link = st.columns([5, 1], vertical_alignment="center")
        head.markdown(
            f"**Run {ident(run.run_id)}** · {run.flow} · {badge(run.status)} · "
            f"{run.started_at[:19].replace('T', ' ')} UTC · why: {item.reason}"
        )
        link.markdown(f"[Open trace]({trace_link(run.run_id)})")
        if run.error:
            st.caption(f"Error: {run.error}")
        given, answered = st.columns(2)
        with given:
            st.markdown("**Inputs**")
            for name, value in run.inputs.items():
                st.caption(name)
                show_value(value)
        with answered:
            st.markdown("**Outputs** · edit one to correct it")
            for name in names:
                text = as_text((run.outputs or {}).get(name))
                st.text_area(
                    name, value=text, key=_output_key(run.run_id, name), height=_height(text),
                    placeholder="No output: type the one it should have given",
                )  # fmt: skip
        note, blame = st.columns([3, 1])
        note.text_input(
            "Comment", key=f"review_comment_{run.run_id}", placeholder="Why, in words: the optimizer reads it"
        )
        blame.selectbox("Blame a node", [NO_NODE, *nodes], key=f"review_node_{run.run_id}")
        with st.container(horizontal=True, vertical_alignment="center"):
            st.button("Good", key="review_good", icon=":material/thumb_up:", type="primary", shortcut="G",
                      on_click=_save, args=(run, names, "good"))  # fmt: skip
            st.button("Bad", key="review_bad", icon=":material/thumb_down:", shortcut="B",
                      on_click=_save, args=(run, names, "bad"))  # fmt: skip
            st.button("Skip", key="review_skip", icon=":material/skip_next:", shortcut="S",
                      on_click=_skip, args=(run.run_id,))  # fmt: skip
            st.caption("Keys: **G** good · **B** bad · **S** skip · **Esc** leaves a text field")


def _up_next(items: list[QueueItem]) -> None:
    if not items:
        return
    st.markdown(f"**Up next** ({len(items)})")
    rows = [
        {"run": i.run.run_id, "flow": i.run.flow, "status": i.run.status,
         "started": i.run.started_at[:19].replace("T", " "), "why": i.reason}
        for i in items[:UP_NEXT]
    ]  # fmt: skip
    runs_table(rows, "review_up_next")


def _export(store: Any, flow: str | None, version: str | None) -> None:
    """Write the flow's reviewed runs as a batch dataset (as `dataset from-reviews`) and show its rows."""
    st.subheader("Dataset from reviews", divider="gray")
    with st.container():
        if flow is None:
            st.caption("Choose a flow above: a dataset holds one flow's reviewed runs.")
            return
        default = str(settings().flows_dir / f"{flow}-reviewed.jsonl")
        path_cell, button_cell = st.columns([4, 1], vertical_alignment="bottom")
        path = path_cell.text_input("Write to", value=default, key=f"review_export_path_{flow}")
        if button_cell.button("Export dataset", key="review_export", icon=":material/download:"):
            try:
                target = _export_target(path)
            except PathRefused as refused:
                st.error(f"Not written: {refused}.")
                return
            rows = reviewed_rows(store, flow, version)
            write_jsonl(rows, target)
            st.session_state[EXPORTED] = (flow, str(target), rows)
        shown = st.session_state.get(EXPORTED)
        if shown is not None and shown[0] == flow:
            _, written, rows = shown
            st.success(f"Wrote {len(rows)} reviewed row{'s' if len(rows) != 1 else ''} of {flow} to {written}.")
            if rows:
                st.dataframe(rows, hide_index=True, key="review_export_rows")


def _export_target(path: str) -> Path:
    """Where the export goes: a `.jsonl` file in a folder of the studio's flows folder (no link followed out)."""
    root = settings().flows_dir
    wanted = Path(path.strip())
    if wanted.suffix != ".jsonl":
        raise PathRefused(f"{path!r} is not a .jsonl file")
    folder = confine(root, wanted.parent, root, kind="dir", what="folder")
    target = folder / wanted.name
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise PathRefused(f"{target} is not a regular file")
    return target


def _counts(store: Any, flow: str | None, waiting: int) -> None:
    line = f"{waiting} run{'s' if waiting != 1 else ''} to review"
    if flow is not None:
        counts = review_counts(store, flow)
        line += f" · {counts.reviewed} reviewed ({counts.good} good, {counts.bad} bad, {counts.corrected} corrected)"
    st.caption(line)


def render() -> None:
    """Filters, the count, the run at the head of the queue, what waits after it, and the export."""
    st.title("Reviews")
    with open_store() as opened:
        store: Any = opened  # every store implements the feedback operations
        where, rule, flow = _filters(opened)
        items = _ordered(review_queue(store, where, rule=rule))
        items = [i for i in items if i.run.run_id not in st.session_state.get(DONE, set())]
        _counts(store, flow, len(items))
        _last_message()
        if items:
            _form(store, items[0])
            _up_next(items[1:])
        else:
            st.info("Nothing to review here: every run the filters keep is reviewed, or none matches the rule.")
        _export(store, flow, where.version)
    st.html(ESCAPE, unsafe_allow_javascript=True)  # last: its empty block adds no gap above the title
