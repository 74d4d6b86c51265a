"""An optimizer experiment: its candidates with every change in full, the score-versus-cost chart
with the Pareto front of the fully scored candidates, the YAML diff of the chosen flow, and saving
the chosen flow under a new flow name, then opening it in the Editor.

A candidate's cost and tokens per example are what its calls cost, answers served from the LLM
cache priced at what they cost when made; the search's own total (the caption) is what it spent.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import streamlit as st

from studio.app.links import editor_page
from studio.app.settings import settings
from studio.app.widgets import money
from studio.editor.layout import sidecar_path
from studio.errors import FlowError
from studio.flow.fmt import dump, round_trip_yaml, yaml_value
from studio.flow.spec import FLOW_NAME, load_flow

FRONT, DOMINATED = "Pareto front", "dominated"
FRONT_COLOR, DOMINATED_COLOR, CHOSEN_COLOR = "#1f77b4", "#9e9e9e", "#d62728"
SCREENED_COLORS = ("#ff7f0e", "#bcbd22", "#8c564b", "#e377c2")
"""One colour per screening size (4 examples, 8 examples, ...)."""
SHAPES = {FRONT: "circle", DOMINATED: "circle"}
"""Screened series are triangles."""
PICK = "candidate_pick"
TABLE = "candidates_table"


def dev_size(summary: dict[str, Any]) -> int:
    """How many dev examples a fully scored candidate was scored on (older reports, which do not
    say: the most any candidate saw)."""
    rows = summary.get("candidates", [])
    seen = max((int(r.get("examples", 0)) for r in rows), default=0)
    return int(summary.get("dev_examples") or seen)


def fully_scored(row: dict[str, Any], size: int) -> bool:
    """Whether the candidate was scored on the whole dev set (rows that do not say count as full)."""
    return "examples" not in row or int(row["examples"]) >= size


def described(row: dict[str, Any]) -> str:
    """Every change from the input flow, in full."""
    return "; ".join(row.get("changes") or []) or str(row.get("move", ""))


def screened_label(examples: int, size: int) -> str:
    return f"screened on {examples} of {size} examples"


def _x_axis(rows: list[dict[str, Any]]) -> str:
    return "cost_per_example" if any(r.get("cost_per_example") for r in rows) else "tokens_per_example"


def _dominated(point: dict[str, Any], full: list[dict[str, Any]], x: str) -> bool:
    """Another fully scored point scores at least as well for no more, and is better in one of the two."""
    return any(
        other is not point
        and other["score"] >= point["score"]
        and other[x] <= point[x]
        and (other["score"] > point["score"] or other[x] < point[x])
        for other in full
    )


def chart_rows(summary: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """One point per scored candidate with its series in `front`: on the Pareto front or dominated
    (the front is over fully scored candidates only), or screened on fewer dev examples (a series
    of its own per size, never on the front). The x axis is cost per example, or tokens per
    example when every call was free (the embedded model)."""
    rows = summary.get("candidates", [])
    size, x = dev_size(summary), _x_axis(rows)
    chosen = (summary.get("after") or {}).get("candidate")
    points = [
        {
            "candidate": r["candidate"],
            "move": described(r),
            "score": float(r["score"]),
            x: float(r.get(x) or 0.0),
            "examples": int(r.get("examples", size)),
            "full": fully_scored(r, size),
            "chosen": r["candidate"] == chosen,
        }
        for r in rows
    ]
    full = [p for p in points if p["full"]]
    for point in points:
        if not point["full"]:
            point["front"] = screened_label(point["examples"], size)
        else:
            point["front"] = DOMINATED if _dominated(point, full, x) else FRONT
    return points, x


def _series(points: list[dict[str, Any]], size: int) -> tuple[list[str], list[str]]:
    """The legend's series in order, with their colours."""
    sizes = sorted({p["examples"] for p in points if not p["full"]})
    screened = [screened_label(n, size) for n in sizes]
    colours = [SCREENED_COLORS[i % len(SCREENED_COLORS)] for i in range(len(screened))]
    return [FRONT, DOMINATED, *screened], [FRONT_COLOR, DOMINATED_COLOR, *colours]


def chart_spec(points: list[dict[str, Any]], x: str, size: int) -> dict[str, Any]:
    """Vega-Lite: the front as a staircase, every candidate a point coloured by its series, the
    chosen one ringed, each labelled with its id."""
    domain, colours = _series(points, size)
    axis = {"field": x, "type": "quantitative", "title": x.replace("_", " ")}
    score = {"field": "score", "type": "quantitative", "scale": {"domain": [0, 1]}, "title": "dev score"}
    tooltip = [
        {"field": "candidate"},
        {"field": "front", "title": "series"},
        {"field": "examples", "title": "dev examples"},
        {"field": "score", "format": ".3f"},
        {"field": x, "title": x.replace("_", " ")},
        {"field": "move", "title": "changes"},
    ]
    return {
        "data": {"values": points},
        "layer": [
            {
                "transform": [{"filter": {"field": "front", "equal": FRONT}}],
                "mark": {"type": "line", "interpolate": "step-after", "color": FRONT_COLOR, "strokeWidth": 2},
                "encoding": {"x": axis, "y": score, "order": {"field": x, "type": "quantitative"}},
            },
            {
                "mark": {"type": "point", "filled": True, "size": 90, "opacity": 0.85},
                "encoding": {
                    "x": axis,
                    "y": score,
                    "color": {
                        "field": "front",
                        "type": "nominal",
                        "title": None,
                        "scale": {"domain": domain, "range": colours},
                        "legend": {"orient": "bottom", "labelLimit": 0},
                    },
                    "shape": {
                        "field": "front",
                        "type": "nominal",
                        "title": None,
                        "scale": {"domain": domain, "range": [SHAPES.get(d, "triangle-up") for d in domain]},
                        "legend": {"orient": "bottom", "labelLimit": 0},
                    },
                    "tooltip": tooltip,
                },
            },
            {
                "transform": [{"filter": "datum.chosen"}],
                "mark": {"type": "point", "size": 320, "color": CHOSEN_COLOR, "strokeWidth": 2},
                "encoding": {"x": axis, "y": score},
            },
            {
                "mark": {"type": "text", "align": "left", "dx": 7, "dy": -7, "fontSize": 11},
                "encoding": {"x": axis, "y": score, "text": {"field": "candidate"}},
            },
        ],
    }


def table_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The candidate table: one row per scored candidate, what it changed (the node first, as in
    `words: 2 searched demos`) right after its name, so that the change is read before the figures."""
    size = dev_size(summary)
    chosen = (summary.get("after") or {}).get("candidate")
    return [
        {
            "candidate": r["candidate"],
            "chosen": "✓" if r["candidate"] == chosen else "",
            "change": r.get("move", ""),
            "score": r["score"],
            "dev examples": f"{r.get('examples', size)} of {size}",
            "calls / example": r.get("calls_per_example", 0.0),
            "tokens / example": r.get("tokens_per_example", 0.0),
            "USD / example": r.get("cost_per_example", 0.0),
            "round": r.get("round"),
            "parent": r.get("parent") or "",
        }
        for r in summary.get("candidates", [])
    ]


CHANGE_PX = 560
"""Room for a move's whole name (about 75 characters: `words+classify: 4 joint bootstrapped demos, with
the signature instruction`) in the table at 1440 px; longer ones are shown whole below it."""
_COLUMNS = {
    "score": st.column_config.NumberColumn("score", format="%.3f"),
    "USD / example": st.column_config.NumberColumn("USD / example", format="%.6f"),
    "tokens / example": st.column_config.NumberColumn("tokens / example", format="%.1f"),
    "calls / example": st.column_config.NumberColumn("calls / example", format="%.2f"),
    "candidate": st.column_config.TextColumn("candidate", width="small"),
    "chosen": st.column_config.TextColumn("chosen", width="small"),
    "parent": st.column_config.TextColumn("parent", width="small"),
    "round": st.column_config.NumberColumn("round", width="small"),
    "change": st.column_config.TextColumn(
        "change", width=CHANGE_PX, help="What it changed from its parent; pick the row for the whole text"
    ),
}
ROW_PX, TABLE_MOST_PX = 35, 600
"""Every candidate visible without scrolling the table, up to this height."""


def _picked_from_table() -> None:
    """A row chosen in the table becomes the candidate whose details show."""
    rows = st.session_state[TABLE].selection.rows
    ids = st.session_state.get("candidate_ids", [])
    if rows and rows[0] < len(ids):
        st.session_state[PICK] = ids[rows[0]]


def _table(summary: dict[str, Any]) -> None:
    rows = table_rows(summary)
    st.session_state["candidate_ids"] = [r["candidate"] for r in rows]
    height = min(ROW_PX * (len(rows) + 1) + 3, TABLE_MOST_PX)
    st.dataframe(
        rows, hide_index=True, key=TABLE, column_config=_COLUMNS, on_select=_picked_from_table,
        selection_mode="single-row", height=height,
    )  # fmt: skip


def _details(summary: dict[str, Any]) -> None:
    """One candidate in full: every change as wrapped text, its score and what it cost."""
    rows = {r["candidate"]: r for r in summary.get("candidates", [])}
    if not rows:
        return
    chosen = (summary.get("after") or {}).get("candidate")
    if st.session_state.get(PICK) not in rows:
        st.session_state[PICK] = chosen if chosen in rows else next(iter(rows))
    labels = {c: f"{c} (chosen)" if c == chosen else c for c in rows}
    pick = st.selectbox("Candidate details (or pick a row above)", list(rows), key=PICK, format_func=labels.__getitem__)
    row, size = rows[pick], dev_size(summary)
    seen = int(row.get("examples", size))
    scope = "fully scored" if seen >= size else "screened: dropped by successive halving"
    cells = st.columns(5)
    cells[0].metric("dev score", f"{row['score']:.3f}")
    cells[1].metric("dev examples", f"{seen} of {size}", help=scope)
    cells[2].metric("USD / example", money(float(row.get("cost_per_example", 0.0))))
    cells[3].metric("tokens / example", f"{float(row.get('tokens_per_example', 0.0)):.1f}")
    cells[4].metric("calls / example", f"{float(row.get('calls_per_example', 0.0)):.2f}")
    held = row.get("held_out_examples")
    parent = f"parent {row['parent']}" if row.get("parent") else "the input flow"
    extra = f" · held-out train {row['held_out_score']:.3f} on {held}" if held else ""
    st.caption(f"{pick}: {parent} · round {row.get('round', '-')} · rung {row.get('rung', '-')} · {scope}{extra}")
    st.markdown("Every change from the input flow")
    st.code("\n".join(row.get("changes") or [str(row.get("move", ""))]), language=None, wrap_lines=True)
    if row.get("sets"):
        st.markdown(f"What its move ({row.get('move', '')}) sets, in full")
        st.code(sets_text(row["sets"]), language="yaml", wrap_lines=True)


def sets_text(values: dict[str, Any]) -> str:
    """A move's edits as YAML (`path: value`; a removed key is `null`), long text as a block."""
    return dump(yaml_value(values))


def _chart(summary: dict[str, Any]) -> None:
    points, x = chart_rows(summary)
    size = dev_size(summary)
    st.markdown(f"**Score versus {x.replace('_', ' ')}** (the Pareto front: the best dev score for its cost)")
    st.vega_lite_chart(chart_spec(points, x, size), width="stretch")
    screened = sum(1 for p in points if not p["full"])
    note = (
        f" {screened} screened candidates (scored on part of the dev set, then dropped) are drawn apart and "
        "are never on the front."
        if screened
        else ""
    )
    st.caption(
        f"The front is over the candidates scored on all {size} dev examples.{note} Cost and tokens are "
        "what each candidate's calls cost, answers from the LLM cache at the price they were made for; "
        f"the search itself spent {summary.get('calls', 0)} calls, {summary.get('tokens', 0)} tokens, "
        f"{money(float(summary.get('cost_usd', 0.0)))}."
    )


def new_flow_name(name: str) -> str:
    """The flow name a typed name gives (`chosen`, or a file name `chosen.yaml`); raises ValueError."""
    stem = re.sub(r"\.ya?ml$", "", name.strip())
    if not re.fullmatch(FLOW_NAME, stem):
        raise ValueError(
            "give a flow name (lowercase letters, digits and dashes) or a file name ending in .yaml, without folders"
        )
    return stem


def renamed(text: str, name: str) -> str:
    """The flow text with its `name:` set to `name`; comments and layout kept (ruamel round trip)."""
    document = round_trip_yaml().load(text)
    document["name"] = name
    return dump(document)


def free_name(folder: Path, base: str) -> str:
    """`BASE-optimized`, numbered when that file exists."""
    stem = re.sub(r"[^a-z0-9-]+", "-", base.lower()).strip("-") or "flow"
    name, number = f"{stem}-optimized", 1
    while (folder / f"{name}.yaml").exists():
        number += 1
        name = f"{stem}-optimized-{number}"
    return name


def save_chosen(summary: dict[str, Any], name: str, folder: Path) -> Path:
    """Write the chosen flow (`flow_out`) as `folder/NAME.yaml` with `name: NAME` inside, and a
    layout beside it when there is one; refuses to overwrite; the new file must load."""
    flow_name = new_flow_name(name)
    target = folder / f"{flow_name}.yaml"
    source = Path(summary["flow_out"])
    text = renamed(source.read_text(encoding="utf-8"), flow_name)
    try:
        with target.open("x", encoding="utf-8") as out:
            out.write(text)
    except FileExistsError:
        raise ValueError(f"{target} exists; choose another name") from None
    try:
        load_flow(target)
    except FlowError as err:
        target.unlink()
        raise ValueError(f"the chosen flow does not load: {err}") from None
    _copy_layout([source, Path(str(summary.get("flow", "")))], target)
    return target


def _copy_layout(sources: list[Path], target: Path) -> None:
    """The first layout sidecar found (the optimized flow's, else its input flow's) goes beside the copy."""
    for source in sources:
        if source.name and sidecar_path(source).is_file() and not sidecar_path(target).exists():
            shutil.copyfile(sidecar_path(source), sidecar_path(target))
            return


def _save(summary: dict[str, Any], flow_name: str) -> None:
    folder = settings().flows_dir
    with st.form("save_chosen"):
        name = st.text_input(
            "New flow name (the file is NAME.yaml in the flows folder)",
            value=free_name(folder, flow_name),
            key="chosen_name",
        )
        if st.form_submit_button("Save as a new flow file"):
            try:
                saved = save_chosen(summary, name, folder)
            except (OSError, ValueError) as err:
                st.error(str(err))
                return
            st.session_state["editor_flow_next"] = saved
            st.switch_page(editor_page())


def render(summary: dict[str, Any], flow_name: str) -> None:
    """The optimizer's part of an experiment page (nothing while the search has no report)."""
    if "candidates" not in summary:
        st.info("The search has not finished; its best flow so far is at " + str(summary.get("flow_out", "?")))
        return
    for note in summary.get("notes", ()):
        st.caption(f"Note: {note}.")
    st.markdown("**Candidates**")
    _table(summary)
    _details(summary)
    _chart(summary)
    st.markdown("**What changed** (YAML diff of the chosen flow)")
    st.code(summary.get("diff") or "(no change)", language="diff")
    _save(summary, flow_name)
