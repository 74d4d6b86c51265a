"""A flow input's form field, by its declared type, and the value it gives the run (the Run page's
form and the Editor's playground)."""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from studio.flow.spec import InputSpec


def _kind(spec: InputSpec) -> str:
    return spec.type.replace(" ", "").removesuffix("|null")


def input_widget(name: str, spec: InputSpec, key: str | None = None) -> Any:
    """One form field per input, by its declared type; lists, dicts and `any` take JSON."""
    kind = _kind(spec)
    help_text = spec.description or None
    default = None if spec.required else spec.default
    label = f"{name} ({spec.type})"
    if kind == "str":
        return st.text_area(label, value=default or "", help=help_text, height=80, key=key)
    if kind == "int":
        return st.number_input(label, value=int(default or 0), step=1, help=help_text, key=key)
    if kind == "float":
        return st.number_input(label, value=float(default or 0.0), help=help_text, key=key)
    if kind == "bool":
        return st.checkbox(label, value=bool(default), help=help_text, key=key)
    text = st.text_area(
        label,
        value=json.dumps(default) if default is not None else "",
        help=help_text + " (JSON)" if help_text else "JSON",
        key=key,
    )
    return input_value(spec, text)


def input_value(spec: InputSpec, raw: Any) -> Any:
    """What an input's field holds as the run's value: JSON read for lists, dicts and `any`."""
    if _kind(spec) in ("str", "int", "float", "bool") or not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw) if raw.strip() else None
    except json.JSONDecodeError:
        return raw
