"""A semantic flow diff (`studio.versions.diff`) on the page: nodes added, removed and renamed, each
changed field (long text as a unified diff), then wires, models, inputs, outputs and files."""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from studio.app.widgets import ident
from studio.versions.diff import format_diff, is_empty

NO_NODES: dict[str, list[Any]] = {"added": [], "removed": [], "renamed": [], "changed": []}


def _value(value: Any) -> str:
    return "—" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _nodes(nodes: dict[str, Any]) -> None:
    lines = [f"- added {ident(n)}" for n in nodes["added"]] + [f"- removed {ident(n)}" for n in nodes["removed"]]
    lines += [f"- renamed {ident(p['from'])} → {ident(p['to'])}" for p in nodes["renamed"]]
    if lines:
        st.markdown("**Nodes**\n\n" + "\n".join(lines))


def _fields(changes: list[dict[str, Any]]) -> None:
    plain = [c for c in changes if "text_diff" not in c]
    if plain:
        st.markdown("**Changed fields**")
        rows = [{"node": c["node"], "field": c["field"], "before": _value(c["before"]), "after": _value(c["after"])}
                for c in plain]  # fmt: skip
        st.dataframe(rows, hide_index=True, key="history_diff_fields")
    for change in (c for c in changes if "text_diff" in c):
        st.markdown(f"Node {ident(change['node'])} · field {ident(change['field'])}")
        st.code(change["text_diff"], language="diff")


def render_diff(diff: dict[str, Any]) -> None:
    """The diff as sections; one line when there is none."""
    if is_empty(diff):
        st.success("No differences.", icon=":material/check:")
        return
    _nodes(diff["nodes"])
    _fields(diff["nodes"]["changed"])
    rest = [line for line in format_diff({**diff, "nodes": NO_NODES}) if line != "no differences"]
    if rest:
        st.markdown("**Wires, models, inputs, outputs and files**")
        st.code("\n".join(rest), language=None)
