"""An optimizer experiment: its candidates, the score-versus-cost chart with the Pareto front,
the YAML diff of the chosen flow, and saving the chosen flow as a new file."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import streamlit as st

from studio.app.settings import settings
from studio.errors import FlowError
from studio.flow.spec import load_flow


def chart_rows(summary: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """One point per fully scored candidate, marked when it is on the Pareto front; the x axis
    is cost per example, or tokens per example when every call was free (the embedded model)."""
    front = {p["candidate"] for p in summary.get("pareto", [])}
    rows = summary.get("candidates", [])
    x = "cost_per_example" if any(r.get("cost_per_example") for r in rows) else "tokens_per_example"
    points = [
        {"candidate": r["candidate"], "move": r.get("move", ""), "score": r["score"], x: r.get(x, 0.0),
         "front": "Pareto front" if r["candidate"] in front else "dominated"}
        for r in rows
    ]  # fmt: skip
    return points, x


def save_chosen(summary: dict[str, Any], name: str, folder: Path) -> Path:
    """Copy the chosen flow (`flow_out`) to `folder/name`; refuses to overwrite; the copy must load."""
    if not name.endswith((".yaml", ".yml")) or "/" in name or name.startswith("."):
        raise ValueError("give a file name ending in .yaml, without folders")
    target = folder / name
    if target.exists():
        raise ValueError(f"{target} exists; choose another name")
    shutil.copyfile(summary["flow_out"], target)
    try:
        load_flow(target)
    except FlowError as err:
        target.unlink()
        raise ValueError(f"the chosen flow does not load: {err}") from None
    return target


def render(summary: dict[str, Any], flow_name: str) -> None:
    """The optimizer's part of an experiment page (nothing while the search has no report)."""
    if "candidates" not in summary:
        st.info("The search has not finished; its best flow so far is at " + str(summary.get("flow_out", "?")))
        return
    st.markdown("**Candidates**")
    st.dataframe(summary["candidates"], hide_index=True, key="candidates_table")
    points, x = chart_rows(summary)
    st.markdown(f"**Score versus {x.replace('_', ' ')}** (the Pareto front is the best score for its cost)")
    st.vega_lite_chart(
        {
            "data": {"values": points},
            "mark": {"type": "point", "filled": True, "size": 80},
            "encoding": {
                "x": {"field": x, "type": "quantitative"},
                "y": {"field": "score", "type": "quantitative", "scale": {"domain": [0, 1]}},
                "color": {"field": "front", "type": "nominal"},
                "tooltip": [{"field": "candidate"}, {"field": "move"}, {"field": "score"}, {"field": x}],
            },
        },
        use_container_width=True,
    )
    st.markdown("**What changed** (YAML diff of the chosen flow)")
    st.code(summary.get("diff") or "(no change)", language="diff")
    with st.form("save_chosen"):
        name = st.text_input("Save the chosen flow as", value=f"{flow_name}.optimized.yaml", key="chosen_name")
        if st.form_submit_button("Save as a new flow file"):
            try:
                saved = save_chosen(summary, name, settings().flows_dir)
            except (OSError, ValueError) as err:
                st.error(str(err))
            else:
                st.success(f"Saved {saved}")
