"""The inspector's form comes from each node type's Config schema, and writes back only what changed."""

from __future__ import annotations

import pytest

from studio.editor.fields import changes, config_fields, shown
from studio.errors import FlowError
from studio.runtime import registry


def test_generate_fields_have_help_widgets_and_defaults() -> None:
    fields = {f.key: f for f in config_fields("llm.generate")}
    assert fields["prompt"].widget == "area" and fields["prompt"].required
    assert "Jinja2" in fields["prompt"].help
    assert fields["form"].widget == "choice" and fields["form"].choices == ("chat", "completion")
    assert fields["max_tokens"].widget == "int" and fields["max_tokens"].optional
    assert fields["demos"].widget == "yaml" and fields["demos"].default == []


@pytest.mark.parametrize("node_type", registry.keys())
def test_every_field_of_every_node_type_has_help(node_type: str) -> None:
    assert all(f.help for f in config_fields(node_type)), node_type


def test_aliases_are_the_file_keys() -> None:
    assert "schema" in {f.key for f in config_fields("human.input")}


def test_only_changed_fields_are_written() -> None:
    fields = config_fields("llm.generate")
    config = {"prompt": "Say {{ x }}", "stop": ["\n"]}
    submitted = {f.key: shown(f, config) for f in fields}
    assert changes(fields, config, submitted) == {}
    submitted["prompt"] = "Say {{ x }}!"
    submitted["form"] = "completion"
    submitted["stop"] = "[]"
    assert changes(fields, config, submitted) == {"prompt": "Say {{ x }}!", "form": "completion", "stop": []}


def test_a_bad_yaml_field_names_the_field() -> None:
    fields = config_fields("llm.generate")
    with pytest.raises(FlowError) as caught:
        changes(fields, {"prompt": "x"}, {"demos": "[unclosed"})
    assert caught.value.field == "config.demos"


def test_values_from_the_round_trip_document_show_and_compare_as_plain_values() -> None:
    from studio.editor.document import EditableFlow
    from tests.conftest import FLOWS

    path = FLOWS / "headline.yaml"
    flow = EditableFlow(path.read_text(encoding="utf-8"), path)
    config = dict(flow.node("headline")["config"])
    fields = config_fields("llm.generate")
    submitted = {f.key: shown(f, config) for f in fields}
    assert submitted["stop"] == '["\\n"]' and submitted["demos"].startswith("- summary:")
    assert changes(fields, config, submitted) == {}
