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

from studio.app import model_picker
from studio.app.flow_tables import (
    input_rows,
    inputs_from_rows,
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
    columns = list(dict.fromkeys(k for r in rows for k in r)) or list(dict.fromkeys(_DEMO_COLUMNS.get())) or ["text"]
    frame = _frame([{c: "" if r.get(c) is None else str(r.get(c)) for c in columns} for r in rows], columns=columns)
    st.caption(label + (f" — {help_text}" if help_text else ""))
    edited = st.data_editor(frame, num_rows="dynamic", hide_index=True, key=key, width="stretch")
    return as_yaml(field, edited.to_dict("records"))


_DEMO_COLUMNS: ContextVar[tuple[str, ...]] = ContextVar("demo_columns", default=())
"""The selected node's input and output port names: the columns of an empty demos table (a name
both ports share, `text` in and out of a fresh `llm.generate`, is one column: a table's columns are unique)."""


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


def _model_field(editor: Editor, spec: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The model alias picker, for a node that calls a model (first in the form, under its prompt)."""
    cls = registry.get(str(spec.get("type")))
    if cls is None or not cls.uses_model:
        return {}
    aliases = [str(a) for a in editor.flow.section("models")] or ["default"]
    current = str(spec.get("model") or "default")
    options = aliases if current in aliases else [current, *aliases]
    return {"model": st.selectbox("model alias", options, index=options.index(current), key=f"{prefix}-model")}


def _node_fields(editor: Editor, node_id: str, spec: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The node-level settings as the form shows them (keys as in the file; `id` for the node's id)."""
    values: dict[str, Any] = {
        "id": st.text_input("id", value=node_id, key=f"{prefix}-id", help="Renaming rewrites every reference."),
        "description": st.text_input(
            "description", value=str(spec.get("description", "")), key=f"{prefix}-description"
        ),
    }
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


PRIMARY = ("prompt", "instructions")
"""What an LLM node's Inspector opens with, in a large editor: its prompt, else its instructions."""


def _primary(fields: list[Field], uses_model: bool) -> Field | None:
    """The field an LLM node is about (its prompt or instructions), shown first in a large editor."""
    if not uses_model:
        return None
    return next((f for key in PRIMARY for f in fields if f.key == key and f.widget == "area"), None)


def _prompt_editor(field: Field, value: str, variables: list[str], key: str) -> str | None:
    """The prompt in the kept code editor (Ace, Jinja colours), the node's input variables offered as
    `{{ name }}` completions. Its text comes back when it loses focus, after a click on Apply has
    been sent: so the text is applied as it comes (returned once, when it differs from the file)."""
    st.markdown(f"**{field.key}**" + (" \\*" if field.required else ""), help=field.help or None)
    try:
        from code_editor import code_editor  # type: ignore[import-untyped]
    except ImportError:  # an install without the studio extra's newer pins
        typed = str(st.text_area(field.key, value=value, key=key, height=160, label_visibility="collapsed"))
        return typed if typed != value else None
    completions = [{"caption": v, "value": "{{ " + v + " }}", "meta": "input", "score": 1000} for v in variables]
    reply = code_editor(
        value,
        lang="django",
        height=[3, 24],
        response_mode="blur",
        completions=completions,
        options={"wrap": True, "showLineNumbers": False, "showGutter": False},
        props={"showPrintMargin": False, "placeholder": "{{ text }}"},
        key=key,
    )
    if variables:
        st.caption("Inputs (type to complete as `{{ name }}`): " + ", ".join(f"`{v}`" for v in variables))
    if not isinstance(reply, dict) or not reply.get("type") or reply.get("id") == st.session_state.get(f"{key}-seen"):
        return None
    st.session_state[f"{key}-seen"] = reply.get("id")
    return str(reply["text"]) if reply.get("text") != value else None


def _node_form(editor: Editor, node_id: str, spec: Mapping[str, Any]) -> None:
    """An LLM node opens on its prompt, then its model and required fields, then Apply; the rest folds
    away, so Apply is within reach; other nodes show their config, then Apply."""
    st.markdown(f"#### {node_id}")
    st.caption(str(spec.get("type")))
    config = dict(spec.get("config") or {})
    fields = config_fields(str(spec.get("type")))
    cls = registry.get(str(spec.get("type")))
    prefix = f"inspect-{node_id}-{editor.version}"
    ports = editor.flow.ports().get(node_id)
    _DEMO_COLUMNS.set(tuple(p.name for p in ports.inputs + ports.outputs) if ports else ())
    primary = _primary(fields, cls is not None and cls.uses_model)
    if primary is not None:
        variables = [p.name for p in ports.inputs if "messages" not in str(p.type)] if ports else []
        typed = _prompt_editor(primary, shown(primary, config), variables, f"inspect-{node_id}-{primary.key}")
        if typed is not None:
            _checked(editor, lambda: editor.edit_config(node_id, changes([primary], config, {primary.key: typed})))
    submitted: dict[str, Any] = {}
    rest = [f for f in fields if f is not primary]
    first = [f for f in rest if f.required] if primary is not None else rest
    with st.form(prefix, border=False):
        node_values = _model_field(editor, spec, prefix)
        submitted |= {f.key: _widget(f, shown(f, config), f"{prefix}-{f.key}") for f in first}
        apply = st.form_submit_button("Apply", type="primary", help="Apply applies the settings below too.")
        more = [f for f in rest if f not in first]
        if more:
            with st.expander(f"More settings ({len(more)})"):
                submitted |= {f.key: _widget(f, shown(f, config), f"{prefix}-{f.key}") for f in more}
        with st.expander("Node: id, guard, order, retry, timeout, cache"):
            node_values |= _node_fields(editor, node_id, spec, prefix)
    if not apply:
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
    text = st.column_config.TextColumn
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
        model_picker.render(editor)


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
