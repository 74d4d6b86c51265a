"""The flow's inputs, outputs and model aliases as table rows for the inspector, and back (no Streamlit here)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from studio.editor.document import EditableFlow
from studio.errors import FlowError

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_PREFIX = "$env."


def _cell(value: Any) -> Any:
    """A table cell as a value: None for an empty one (pandas gives NaN or None)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, str) and not value.strip():
        return None
    return value


def _named(rows: list[dict[str, Any]], key: str, what: str) -> list[tuple[str, dict[str, Any]]]:
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        name = _cell(row.get(key))
        if name is None:
            if any(_cell(v) is not None for v in row.values()):
                raise FlowError(f"every {what} needs a {key}", field=key)
            continue
        name = str(name).strip()
        if name in found:
            raise FlowError(f"{what} {name!r} appears twice", field=key)
        found[name] = row
    return list(found.items())


def input_rows(inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name, spec in inputs.items():
        spec = spec if isinstance(spec, dict) else {}
        default = spec.get("default")
        shown = (
            "" if "default" not in spec else default if isinstance(default, str) else yaml.safe_dump(default).strip()
        )
        if shown.endswith("\n..."):
            shown = shown[: -len("\n...")]
        rows.append({"name": str(name), "type": str(spec.get("type", "str")),
                     "description": str(spec.get("description", "")), "default": shown})  # fmt: skip
    return rows


def _default(text: Any, type_name: str) -> Any:
    """A default cell: kept as text for `str` inputs, read as YAML for the others."""
    if text is None:
        return None
    if type_name == "str":
        return str(text)
    try:
        return yaml.safe_load(str(text))
    except yaml.YAMLError as err:
        raise FlowError(f"default {text!r} is not a YAML value: {err}", field="default") from None


def inputs_from_rows(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rows → the `inputs:` section (None values: keys to remove); raises FlowError on a nameless or repeated row."""
    found = {}
    for name, row in _named(rows, "name", "input"):
        type_name = str(_cell(row.get("type")) or "str")
        found[name] = {"type": type_name, "description": _cell(row.get("description")),
                       "default": _default(_cell(row.get("default")), type_name)}  # fmt: skip
    return found


def output_rows(outputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"name": str(name), "value": str(value)} for name, value in outputs.items()]


def outputs_from_rows(rows: list[dict[str, Any]]) -> dict[str, str]:
    found = {}
    for name, row in _named(rows, "name", "output"):
        value = _cell(row.get("value"))
        if value is None:
            raise FlowError(f"output {name!r} needs a value such as $node.port", field="value")
        found[name] = str(value)
    return found


def references(flow: EditableFlow) -> list[str]:
    """Every `$node.port` and `$inputs.name` an output may read."""
    found = [f"$inputs.{name}" for name in flow.section("inputs")]
    for node_id, ports in flow.ports().items():
        found += [f"${node_id}.{port.name}" for port in ports.outputs]
    return found


MODEL_COLUMNS = ("model", "temperature", "max_tokens", "api_base", "api_key")


def model_rows(models: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for alias, spec in models.items():
        spec = spec if isinstance(spec, dict) else {}
        row: dict[str, Any] = {"alias": str(alias)} | {c: spec.get(c) for c in MODEL_COLUMNS}
        key = row["api_key"]
        row["api_key"] = key[len(_ENV_PREFIX) :] if isinstance(key, str) and key.startswith(_ENV_PREFIX) else key
        rows.append(row)
    return rows


def models_from_rows(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rows → the `models:` section; an api_key is the name of an environment variable, written `$env.NAME`."""
    found = {}
    for alias, row in _named(rows, "alias", "model alias"):
        model = _cell(row.get("model"))
        if model is None:
            raise FlowError(f"model alias {alias!r} needs a model string such as local/smollm2", field="model")
        key = _cell(row.get("api_key"))
        if key is not None:
            key = str(key).strip().removeprefix(_ENV_PREFIX)
            if not _ENV_NAME.match(key):
                raise FlowError(
                    f"api_key of {alias!r}: the name of an environment variable, not a key", field="api_key"
                )
            key = _ENV_PREFIX + key
        temperature, max_tokens = _cell(row.get("temperature")), _cell(row.get("max_tokens"))
        found[alias] = {
            "model": str(model),
            "temperature": None if temperature is None else float(temperature),
            "max_tokens": None if max_tokens is None else int(max_tokens),
            "api_base": _cell(row.get("api_base")),
            "api_key": key,
        }
    return found
