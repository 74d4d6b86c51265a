"""The YAML loading rules: nothing unsafe gets in, every error has a line."""

from __future__ import annotations

import pytest

from studio.errors import LoadError
from studio.flow import loader

BILLION_LAUGHS = """
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
"""


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("a: 1\nb: !!python/object/apply:os.system ['echo hi']\n", 2, "not allowed"),
        ("a: !!python/name:os.system\n", 1, "not allowed"),
        ("a: 1\nb: 2\na: 3\n", 3, "duplicate key 'a'"),
        (BILLION_LAUGHS, None, "alias bomb"),
        ("x: " + "[" * 100 + "]" * 100 + "\n", 1, "nesting deeper"),
        ("a: [1, 2\n", None, "invalid YAML"),
        ("", 1, "empty"),
        ("? [1, 2]\n: x\n", 1, "must be a string"),
    ],
)
def test_refuses_unsafe_or_malformed_yaml(text: str, line: int | None, message: str) -> None:
    with pytest.raises(LoadError) as caught:
        loader.loads(text, file="f.yaml")
    assert message in caught.value.message
    assert caught.value.file == "f.yaml"
    if line is not None:
        assert caught.value.line == line


def test_too_many_aliases() -> None:
    text = "a: &x 1\nb: [" + ", ".join(["*x"] * (loader.MAX_ALIASES + 1)) + "]\n"
    with pytest.raises(LoadError, match="aliases"):
        loader.loads(text)


def test_file_over_size_cap_is_refused_before_parsing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "big.yaml"
    path.write_text("a: '" + "x" * (loader.MAX_BYTES + 1) + "'\n")
    with pytest.raises(LoadError, match="larger than"):
        loader.load_file(path)


@pytest.mark.parametrize(
    ("scalar", "value"),
    [
        ("yes", "yes"),
        ("NO", "NO"),
        ("on", "on"),
        ("true", True),
        ("False", False),
        ("012", "012"),
        ("12", 12),
        ("0x1f", 31),
        ("1.5", 1.5),
        ("1e3", 1000.0),
        ("2020-01-01", "2020-01-01"),
        ("1:30", "1:30"),
        ("~", None),
        ("null", None),
    ],
)
def test_scalars_follow_yaml_1_2_core(scalar: str, value: object) -> None:
    assert loader.loads(f"v: {scalar}\n").data == {"v": value}


def test_lines_are_recorded_for_nested_values() -> None:
    document = loader.loads("a:\n  b:\n    - x\n    - y\n")
    assert document.line_of(("a", "b", 1)) == 4
    assert document.line_of(("a", "b", 7, "missing")) == 2
    assert document.line_of(("a",)) == 1
