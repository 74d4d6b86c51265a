"""The inspector beside the canvas: a form made from the selected node's Config schema."""

from __future__ import annotations

from typing import Any

import streamlit as st

from studio.editor.document import template_variables
from studio.editor.editor import Editor
from studio.editor.fields import Field, changes, config_fields, shown
from studio.errors import FlowError
from studio.runtime import registry


def _widget(field: Field, value: Any, key: str) -> Any:
    label = field.key + (" *" if field.required else "")
    help_text = field.help or None
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


def _node_fields(editor: Editor, spec: Any, prefix: str) -> dict[str, Any]:
    cls = registry.get(str(spec.get("type")))
    values: dict[str, Any] = {
        "description": st.text_input("description", value=str(spec.get("description", "")), key=f"{prefix}-description")
    }
    if cls is not None and cls.uses_model:
        aliases = [str(a) for a in editor.flow.section("models")] or ["default"]
        current = str(spec.get("model") or "default")
        options = aliases if current in aliases else [current, *aliases]
        values["model"] = st.selectbox("model alias", options, index=options.index(current), key=f"{prefix}-model")
    return values


def render_inspector(editor: Editor) -> None:
    """The selected node's settings; Apply writes only the fields that changed."""
    node_id = editor.selected
    spec = editor.flow.node(node_id) if node_id else {}
    if not node_id or not spec:
        st.caption("Select a node to edit it. Drag from an output port to an input port to connect.")
        return
    st.subheader(node_id)
    st.caption(str(spec.get("type")))
    config = dict(spec.get("config") or {})
    fields = config_fields(str(spec.get("type")))
    prefix = f"inspect-{node_id}-{editor.version}"
    with st.form(prefix, border=False):
        node_values = _node_fields(editor, spec, prefix)
        submitted = {f.key: _widget(f, shown(f, config), f"{prefix}-{f.key}") for f in fields}
        if not st.form_submit_button("Apply", type="primary"):
            return
    try:
        edits = changes(fields, config, submitted)
    except FlowError as err:
        st.error(f"{err.field}: {err.message}")
        return
    for key, value in node_values.items():
        if value != (spec.get(key) or ("default" if key == "model" else "")):
            editor.edit_field(node_id, key, None if key == "model" and value == "default" else value)
    if edits:
        editor.edit_config(node_id, edits)
    st.rerun()
