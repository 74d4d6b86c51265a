"""The inspector's form, described from a node type's Config model (no Streamlit here).

Each Config field becomes one widget: its docstring is the help text, its annotation picks
the widget, and only fields whose value differs from what the file says (or from the default,
for a field the file leaves out) are written back.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic.fields import FieldInfo

from studio.errors import FlowError
from studio.flow.loader import loads
from studio.runtime import registry

LONG = {"prompt", "template", "system", "instructions", "code", "until", "body"}
"""String fields edited in a text area."""
Widget = typing.Literal["text", "area", "bool", "int", "float", "choice", "yaml"]


@dataclass(frozen=True)
class Field:
    """One inspector widget."""

    key: str
    """The key in the flow file (a field's alias where it has one)."""
    widget: Widget
    help: str
    default: Any
    required: bool
    choices: tuple[str, ...] = ()
    optional: bool = False
    """Whether the value may be left empty (removed from the file)."""
    shape: typing.Literal["", "chips", "table"] = ""
    """For a `yaml` field, a friendlier editor: `chips` for a list of strings (labels, stop
    sequences), `table` for a list of mappings (demos, one row each). Either gives its value back
    as YAML text (`as_yaml`), so parsing and comparing stay the same."""


def _plain_annotation(annotation: Any) -> tuple[Any, bool]:
    """The annotation without `| None`, and whether None was part of it."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(members) < len(typing.get_args(annotation))
        return (members[0] if len(members) == 1 else annotation), optional
    return annotation, False


def _widget(name: str, annotation: Any) -> tuple[Widget, tuple[str, ...]]:
    if typing.get_origin(annotation) is typing.Literal:
        return "choice", tuple(str(a) for a in typing.get_args(annotation))
    simple: dict[Any, Widget] = {bool: "bool", int: "int", float: "float"}
    if annotation is str:
        return ("area" if name in LONG else "text"), ()
    return simple.get(annotation, "yaml"), ()


def _shape(annotation: Any) -> typing.Literal["", "chips", "table"]:
    if typing.get_origin(annotation) is not list:
        return ""
    (item,) = typing.get_args(annotation) or (Any,)
    if item is str:
        return "chips"
    return "table" if item is dict or typing.get_origin(item) is dict else ""


def _field(name: str, info: FieldInfo) -> Field:
    annotation, optional = _plain_annotation(info.annotation)
    widget, choices = _widget(name, annotation)
    shape = _shape(annotation) if widget == "yaml" else ""
    default = None if info.is_required() else info.get_default(call_default_factory=True)
    return Field(
        key=info.alias or name,
        widget=widget,
        help=(info.description or "").strip(),
        default=default,
        required=info.is_required(),
        choices=choices,
        optional=optional,
        shape=shape,
    )


def config_fields(node_type: str) -> list[Field]:
    """The widgets for a node type's Config, in declaration order (empty for an unknown type)."""
    cls = registry.get(node_type)
    if cls is None:
        return []
    return [_field(name, info) for name, info in cls.Config.model_fields.items()]


def plain(value: Any) -> Any:
    """A round-trip document's value as plain dicts, lists and scalars (ruamel's types are subclasses)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    return float(value) if isinstance(value, float) else value


def _yaml_text(value: Any) -> str:
    """Flat values on one line as JSON (`["\\n"]`, which YAML reads too); nested ones as block YAML."""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    if not any(isinstance(item, (dict, list)) for item in items):
        return json.dumps(value, ensure_ascii=False)
    return str(yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=4096)).strip()


def shown(field: Field, config: dict[str, Any]) -> Any:
    """The value a widget starts with: the file's, else the default; YAML fields as text."""
    value = plain(config.get(field.key, field.default))
    if field.widget == "yaml":
        return "" if value is None else _yaml_text(value)
    if field.widget in ("text", "area"):
        return "" if value is None else str(value)
    return value


def _empty(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, float) and value != value)  # NaN: an empty cell


def table_rows(rows: Any) -> list[dict[str, Any]]:
    """A table editor's rows as a list of mappings: empty cells dropped, then empty rows."""
    found = []
    for row in rows or []:
        kept = {str(k): v for k, v in dict(row).items() if not _empty(v)}
        if kept:
            found.append(kept)
    return found


def as_yaml(field: Field, value: Any) -> str:
    """A chips or table editor's value as the YAML text a `yaml` field submits ("" for none, when optional)."""
    items = table_rows(value) if field.shape == "table" else [str(v) for v in value or []]
    if not items and (field.optional or field.default is None):
        return ""
    return _yaml_text(items)


def parse(field: Field, value: Any) -> Any:
    """A submitted widget value as the config value; raises FlowError naming the field."""
    if field.widget == "yaml":
        text = str(value).strip()
        return loads(text, file=f"config.{field.key}").data if text else None
    if field.widget in ("text", "area") and value == "" and (field.optional or field.default is None):
        return None
    return value


def changes(fields: list[Field], config: dict[str, Any], submitted: dict[str, Any]) -> dict[str, Any]:
    """Config edits (None: remove the key) for what the person changed; raises FlowError."""
    edits: dict[str, Any] = {}
    for field in fields:
        if field.key not in submitted:
            continue
        try:
            value = parse(field, submitted[field.key])
        except FlowError as err:
            raise FlowError(err.message, field=f"config.{field.key}", line=err.line) from None
        if field.key in config:
            if value != config[field.key]:
                edits[field.key] = value
        elif value is not None and value != field.default and not _unset_bool(field, value):
            edits[field.key] = value
    return edits


def _unset_bool(field: Field, value: Any) -> bool:
    """An unticked box for a `bool | None` field the file leaves out (None: the node decides): a
    checkbox cannot say None, so its False writes nothing."""
    return field.widget == "bool" and field.default is None and value is False
