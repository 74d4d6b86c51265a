"""Bad flow files: exit code 2, one paragraph naming file, line and field, nothing executed."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.errors import FlowError
from studio.flow.spec import load_flow
from studio.runtime.compiler import compile_flow
from tests.conftest import CLI, FIXTURES

BAD = FIXTURES / "bad"

# file, line, field (or None), words the message must contain
CASES = [
    ("python-tag.yaml", 6, None, "not allowed"),
    ("alias-bomb.yaml", None, None, "alias"),
    ("too-deep.yaml", 7, None, "nesting deeper"),
    ("duplicate-keys.yaml", 5, "nodes.a", "duplicate key 'a'"),
    ("unknown-type.yaml", 5, "nodes.a.type", "did you mean 'llm.generate'"),
    ("missing-node.yaml", 7, "nodes.b.inputs.x", "missing node 'c'"),
    ("missing-port.yaml", 7, "nodes.b.inputs.x", "has no output 'label'"),
    (
        "type-mismatch.yaml",
        11,
        "nodes.classify.inputs.text",
        "$inputs.tags (list[str]) cannot feed classify.text (str)",
    ),
    ("cycle.yaml", 4, "nodes.a", "cycle: a -> b -> c -> a"),
    ("api-key.yaml", 6, "models.default.api_key", "literal API key"),
    ("bad-node-id.yaml", 4, "nodes.Classify-Ticket", "must match"),
    ("no-version.yaml", 1, "flowstudio", "missing `flowstudio: 1`"),
    ("unknown-version.yaml", 1, "flowstudio", "unknown schema version 7"),
    ("template-variable.yaml", 8, "nodes.greet.inputs", "template variable 'order_id' has no input"),
    ("unknown-field.yaml", 7, "nodes.a.retries", "unknown field 'retries'"),
    ("bad-when.yaml", 7, "nodes.b.when", "'nope'"),
    ("missing-alias.yaml", 8, "nodes.a.model", "alias 'slow'"),
    ("loop-unbounded.yaml", 7, "nodes.spin.config.max_iterations", "Field required"),
    ("bad-fallback.yaml", 6, "models.default.fallbacks.0", "fallback 'backup'"),
    ("bad-config.yaml", 10, "nodes.a.config.labels", "valid list"),
]


@pytest.mark.parametrize(("name", "line", "field", "words"), CASES, ids=[c[0] for c in CASES])
def test_library_error_names_file_line_and_field(name: str, line: int | None, field: str | None, words: str) -> None:
    with pytest.raises(FlowError) as caught:
        compile_flow(load_flow(BAD / name))
    err = caught.value
    assert words in err.message
    assert err.file is not None and err.file.endswith(name)
    if line is not None:
        assert err.line == line, str(err)
    if field is not None:
        assert err.field == field, str(err)


@pytest.mark.parametrize(("name", "line", "field", "words"), CASES, ids=[c[0] for c in CASES])
def test_cli_exits_2_with_one_paragraph(cli: CLI, name: str, line: int | None, field: str | None, words: str) -> None:
    for command in (["validate"], ["run"]):
        result = cli(*command, str(BAD / name))
        assert result.code == 2, result.err
        assert "Traceback" not in result.err
        assert result.err.startswith("error: ") and name in result.err
        assert words in result.err
        assert len(result.err.strip().splitlines()) == 1
    assert not Path("/tmp/flowstudio-pwned").exists()
    assert cli("runs", "--json").json() == []


def test_file_over_one_mebibyte(cli: CLI, tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("flowstudio: 1\nname: big\ndescription: '" + "x" * (1024 * 1024) + "'\nnodes: {}\n")
    result = cli("validate", str(path))
    assert result.code == 2
    assert "larger than 1024 KiB" in result.err and "big.yaml:1" in result.err


def test_bad_run_inputs_execute_nothing(cli: CLI) -> None:
    flow = str(FIXTURES / "chain.yaml")
    assert cli("run", flow).code == 2  # required input missing
    result = cli("run", flow, "-i", "topic=x", "-i", "colour=red")
    assert result.code == 2 and "unknown input 'colour'" in result.err
    assert cli("runs", "--json").json() == []
