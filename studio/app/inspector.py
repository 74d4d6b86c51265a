"""The inspector beside the canvas: the selected node's settings (its id, guard, ordering, retry,
timeout, cache, model alias and a form made from its Config schema), and the flow's inputs,
outputs and model aliases. Every Apply is one checked step: a value that would break the flow is
refused with its message and nothing changes."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

import streamlit as st

from studio.app.flow_tables import (
    input_rows,
    inputs_from_rows,
    model_rows,
    models_from_rows,
    output_rows,
    outputs_from_rows,
    references,
)
from studio.editor.document import template_variables
from studio.editor.editor import Editor
from studio.editor.fields import Field, as_yaml, changes, config_fields, plain, shown
from studio.errors import FlowError
from studio.runtime import registry


def _chips(field: Field, value: str, key: str, label: str, help_text: str | None) -> str:
    current = [str(v) for v in (plain(_loaded(value)) or [])]
    picked = st.multiselect(
        label, current, default=current, accept_new_options=True, help=help_text, key=key, format_func=_visible
    )
    return as_yaml(field, picked)


def _visible(value: str) -> str:
    """A chip's text with newlines and tabs written as escapes (a stop sequence is often just "\\n")."""
    return json.dumps(value)[1:-1] if not value.isprintable() or value != value.strip() else value


def _table(field: Field, value: str, key: str, label: str, help_text: str | None) -> str:
    rows = [r for r in plain(_loaded(value)) or [] if isinstance(r, dict)]
    columns = list(dict.fromkeys(k for r in rows for k in r)) or list(_DEMO_COLUMNS.get()) or ["text"]
    frame = _frame([{c: "" if r.get(c) is None else str(r.get(c)) for c in columns} for r in rows], columns=columns)
    st.caption(label + (f" — {help_text}" if help_text else ""))
    edited = st.data_editor(frame, num_rows="dynamic", hide_index=True, key=key, width="stretch")
    return as_yaml(field, edited.to_dict("records"))


_DEMO_COLUMNS: ContextVar[tuple[str, ...]] = ContextVar("demo_columns", default=())
"""The selected node's input and output port names: the columns of an empty demos table."""


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> Any:
    """A table for `st.data_editor` (pandas: Streamlit's own dependency)."""
    import pandas as pd  # type: ignore[import-untyped]

    return pd.DataFrame(rows, columns=columns)


def _loaded(text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text) if text else None
    except yaml.YAMLError:
        return None


def _widget(field: Field, value: Any, key: str) -> Any:
    label = field.key + (" *" if field.required else "")
    help_text = field.help or None
    if field.shape == "chips":
        return _chips(field, value, key, label, help_text)
    if field.shape == "table":
        return _table(field, value, key, label, help_text)
    if field.widget == "area":
        typed = st.text_area(label, value=value, help=help_text, key=key, height=120)
        variables = template_variables(str(value))
        if variables:
            st.caption("Variables (each one an input port): " + ", ".join(f"`{v}`" for v in variables))
        return typed
    if field.widget == "bool":
        return st.checkbox(label, value=bool(value), help=help_text, key=key)
    if field.widget == "int":
        return st.number_input(label, value=value, step=1, help=help_text, key=key)
    if field.widget == "float":
        return st.number_input(label, value=value, help=help_text, key=key)
    if field.widget == "choice":
        index = field.choices.index(str(value)) if str(value) in field.choices else 0
        return st.selectbox(label, field.choices, index=index, help=help_text, key=key)
    if field.widget == "yaml":
        return st.text_area(label, value=value, help=(help_text or "") + " (YAML)", key=key, height=90)
    return st.text_input(label, value=value, help=help_text, key=key)


def _node_fields(editor: Editor, node_id: str, spec: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The node-level settings as the form shows them (keys as in the file; `id` for the node's id)."""
    cls = registry.get(str(spec.get("type")))
    values: dict[str, Any] = {
        "id": st.text_input("id", value=node_id, key=f"{prefix}-id", help="Renaming rewrites every reference."),
        "description": st.text_input(
            "description", value=str(spec.get("description", "")), key=f"{prefix}-description"
        ),
    }
    if cls is not None and cls.uses_model:
        aliases = [str(a) for a in editor.flow.section("models")] or ["default"]
        current = str(spec.get("model") or "default")
        options = aliases if current in aliases else [current, *aliases]
        values["model"] = st.selectbox("model alias", options, index=options.index(current), key=f"{prefix}-model")
    values["when"] = st.text_input(
        "when",
        value=str(spec.get("when") or ""),
        key=f"{prefix}-when",
        help="A guard over upstream outputs, e.g. route.label == 'math'; false skips the node.",
    )
    others = [str(n) for n in editor.flow.nodes() if str(n) != node_id]
    after = [str(a) for a in spec.get("after") or [] if str(a) in others]
    values["after"] = st.multiselect(
        "after", others, default=after, key=f"{prefix}-after", help="Nodes that finish first."
    )
    retry: Mapping[str, Any] = spec["retry"] if isinstance(spec.get("retry"), dict) else {}
    left, right = st.columns(2)
    values["retry_attempts"] = left.number_input(
        "retry attempts", 0, 20, int(retry.get("attempts", 3)) if spec.get("retry") else 0, key=f"{prefix}-attempts",
        help="Total attempts, the first included; 0: no retry policy.",
    )  # fmt: skip
    values["retry_backoff_s"] = right.number_input(
        "retry backoff_s", 0.0, 600.0, float(retry.get("backoff_s", 1.0)), key=f"{prefix}-backoff"
    )
    left, right = st.columns(2)
    values["timeout_s"] = left.number_input(
        "timeout_s", 0.0, 86400.0, float(spec.get("timeout_s") or 0), key=f"{prefix}-timeout", help="0: no timeout."
    )
    values["cache"] = right.checkbox("cache", value=spec.get("cache", True) is not False, key=f"{prefix}-cache")
    return values


def _apply_node_fields(editor: Editor, node_id: str, spec: Mapping[str, Any], values: Mapping[str, Any]) -> None:
    """Write the node-level settings that differ from the file (defaults are left out of it)."""
    wanted: dict[str, Any] = {
        "description": values["description"] or None,
        "when": values["when"].strip() or None,
        "after": list(values["after"]) or None,
        "timeout_s": float(values["timeout_s"]) or None,
        "cache": None if values["cache"] else False,
    }
    if "model" in values:
        wanted["model"] = None if values["model"] == "default" and "model" not in spec else values["model"]
    attempts = int(values["retry_attempts"])
    wanted["retry"] = {"attempts": attempts, "backoff_s": float(values["retry_backoff_s"])} if attempts else None
    for key, value in wanted.items():
        if plain(spec.get(key)) != value:
            editor.edit_field(node_id, key, value)


def _node_form(editor: Editor, node_id: str, spec: Mapping[str, Any]) -> None:
    st.subheader(node_id)
    st.caption(str(spec.get("type")))
    config = dict(spec.get("config") or {})
    fields = config_fields(str(spec.get("type")))
    prefix = f"inspect-{node_id}-{editor.version}"
    ports = editor.flow.ports().get(node_id)
    _DEMO_COLUMNS.set(tuple(p.name for p in ports.inputs + ports.outputs) if ports else ())
    with st.form(prefix, border=False):
        node_values = _node_fields(editor, node_id, spec, prefix)
        st.markdown("**Config**")
        submitted = {f.key: _widget(f, shown(f, config), f"{prefix}-{f.key}") for f in fields}
        if not st.form_submit_button("Apply", type="primary"):
            return

    def change() -> None:
        edits = changes(fields, config, submitted)
        if edits:
            editor.edit_config(node_id, edits)
        _apply_node_fields(editor, node_id, spec, node_values)
        new_id = str(node_values["id"]).strip()
        if new_id != node_id:
            editor.rename(node_id, new_id)

    _checked(editor, change)


def _checked(editor: Editor, change: Callable[[], None]) -> None:
    """Apply the form's edits as one step; a refusal stays on screen until the next Apply."""
    refused = editor.checked_edit(change)
    st.session_state["inspector_refused"] = (editor.version, refused) if refused else None
    st.rerun()


def _table_form(editor: Editor, name: str, rows: list[dict[str, Any]], config: dict[str, Any], build: Any) -> None:
    key = f"flow-{name}-{editor.version}"
    with st.form(key, border=False):
        frame = _frame(rows, columns=list(config))
        edited = st.data_editor(
            frame,
            num_rows="dynamic",
            hide_index=True,
            column_config=config,
            key=f"{key}-table",
            width="stretch",
        )
        if not st.form_submit_button("Apply", key=f"{key}-apply"):
            return
    try:
        apply = build(edited.to_dict("records"))
    except FlowError as err:
        editor.version += 1  # the form starts again from the file
        st.session_state["inspector_refused"] = (editor.version, f"{name}: {err.message}")
        st.rerun()
    _checked(editor, apply)


def _flow_forms(editor: Editor, *, expanded: bool) -> None:
    text, number = st.column_config.TextColumn, st.column_config.NumberColumn
    with st.expander("Flow inputs", expanded=expanded):
        columns = {"name": text("name", required=True), "type": text("type", default="str"),
                   "description": text("description"), "default": text("default", help="empty: required")}  # fmt: skip
        _table_form(editor, "inputs", input_rows(editor.flow.section("inputs")), columns,
                    lambda rows: (lambda: editor.edit_section("inputs", inputs_from_rows(rows))))  # fmt: skip
    with st.expander("Flow outputs", expanded=expanded):
        current = output_rows(editor.flow.section("outputs"))
        options = sorted(set(references(editor.flow)) | {r["value"] for r in current})
        columns = {
            "name": text("name", required=True),
            "value": st.column_config.SelectboxColumn("value", options=options),
        }
        _table_form(editor, "outputs", current, columns,
                    lambda rows: (lambda: editor.edit_outputs(outputs_from_rows(rows))))  # fmt: skip
    with st.expander("Model aliases", expanded=expanded):
        columns = {"alias": text("alias", required=True), "model": text("model", required=True),
                   "temperature": number("temperature", min_value=0.0, max_value=2.0),
                   "max_tokens": number("max_tokens", min_value=1, step=1), "api_base": text("api_base"),
                   "api_key": text("api_key", help="the name of an environment variable, e.g. OPENAI_API_KEY")}  # fmt: skip
        _table_form(editor, "models", model_rows(editor.flow.section("models")), columns,
                    lambda rows: (lambda: editor.edit_section("models", models_from_rows(rows))))  # fmt: skip


def _refusal(editor: Editor) -> None:
    refused = st.session_state.get("inspector_refused")
    if refused and refused[0] == editor.version:
        st.error(f"Not applied: {refused[1]}", icon=":material/block:")


def render_inspector(editor: Editor) -> None:
    """The selected node's settings; Apply writes only what changed."""
    _refusal(editor)
    node_id = editor.selected
    spec = editor.flow.node(node_id) if node_id else {}
    if node_id and spec:
        _node_form(editor, node_id, spec)
        return
    st.caption(
        "Select a node to edit it. Drag from an output port to an input port to connect. "
        "The flow's inputs, outputs and models are under Flow."
    )


def render_flow_settings(editor: Editor) -> None:
    """The flow's inputs, outputs and model aliases as tables."""
    _refusal(editor)
    _flow_forms(editor, expanded=True)
