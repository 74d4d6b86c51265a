"""A run's stored flow is read again with libyaml: the same data and lines as the capped loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.errors import LoadError
from studio.flow.loader import loads, loads_stored
from tests.conftest import ROOT

FLOWS = sorted([*(ROOT / "flows").glob("*.yaml"), *(ROOT / "tests" / "flows").glob("*.yaml")])


@pytest.mark.parametrize("path", FLOWS, ids=[p.name for p in FLOWS])
def test_same_data_and_lines_as_loads(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    try:
        expected = loads(text, file=path.name)
    except LoadError as err:
        with pytest.raises(LoadError) as raised:
            loads_stored(text, file=path.name)
        assert (raised.value.line, str(raised.value)) == (err.line, str(err))
        return
    found = loads_stored(text, file=path.name)
    assert (found.data, found.lines, found.file) == (expected.data, expected.lines, expected.file)


@pytest.mark.parametrize(
    "text",
    [
        "a: [1, 2\n",  # broken YAML
        "a: 1\na: 2\n",  # a duplicate key
        "a: !!python/object:os.system x\n",  # a tag that is not plain data
        "when: yes\nday: 2024-01-01\nn: 012\n",  # YAML 1.2 core: these stay strings
    ],
)
def test_problems_and_scalars_come_out_as_from_loads(text: str) -> None:
    try:
        expected = loads(text, file="f.yaml")
    except LoadError as err:
        with pytest.raises(LoadError) as raised:
            loads_stored(text, file="f.yaml")
        assert (raised.value.line, str(raised.value)) == (err.line, str(err))
        return
    assert loads_stored(text, file="f.yaml").data == expected.data
