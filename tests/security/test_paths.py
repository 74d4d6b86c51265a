"""Every path a flow names stays under the project root; kinds are refused; sizes counted while reading."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from studio.cli import main
from studio.errors import FlowError
from studio.export import export_flow
from studio.flow.spec import load_flow
from studio.runtime.compiler import compile_flow
from tests.nodes.runner import HEADER, run_flow
from tests.security.conftest import SECRET, Canary

CALLER = (
    HEADER
    + """nodes:
  call: {type: flow.call, config: {flow: SUB}}
"""
)
LEAF = (
    HEADER.replace("scenario", "leaf")
    + """outputs: {text: $t.text}
nodes:
  t: {type: text.template, config: {template: leaf}}
"""
)


def _caller(folder: Path, sub: str, name: str = "main.yaml") -> Path:
    path = folder / name
    path.write_text(CALLER.replace("SUB", sub))
    return path


def _refused(flow: Path, *needles: str) -> str:
    with pytest.raises(FlowError) as refused:
        compile_flow(load_flow(flow))
    message = str(refused.value)
    assert all(n in message for n in needles), message
    assert "Traceback" not in message and "\n" not in message
    return message


def test_a_sub_flow_up_and_out_is_refused(canary: Canary) -> None:
    outside = canary.root.parent / "outside.yaml"
    outside.write_text(LEAF)
    _refused(_caller(canary.root, "../outside.yaml"), "outside the project root", "--root")
    assert canary.untouched()


def test_a_symlinked_sub_flow_pointing_out_is_refused(canary: Canary) -> None:
    outside = canary.root.parent / "outside.yaml"
    outside.write_text(LEAF)
    (canary.root / "inner.yaml").symlink_to(outside)
    _refused(_caller(canary.root, "inner.yaml"), "resolves to", "outside the project root")


def test_root_lets_the_user_widen_it(canary: Canary, monkeypatch: pytest.MonkeyPatch) -> None:
    (canary.root.parent / "outside.yaml").write_text(LEAF)
    monkeypatch.setenv("FLOWSTUDIO_ROOT", str(canary.root.parent))
    assert compile_flow(load_flow(_caller(canary.root, "../outside.yaml")))


@pytest.mark.parametrize(
    ("target", "kind"),
    [("/dev/zero", "a character device"), ("sub", "a directory"), ("fifo.yaml", "a FIFO")],
)
def test_sub_flows_of_the_wrong_kind_are_refused(
    target: str, kind: str, canary: Canary, monkeypatch: pytest.MonkeyPatch
) -> None:
    (canary.root / "sub").mkdir()
    os.mkfifo(canary.root / "fifo.yaml")
    if target.startswith("/"):
        monkeypatch.setenv("FLOWSTUDIO_ROOT", "/")
    _refused(_caller(canary.root, target), f"is {kind}, not a regular file")


def test_a_nul_byte_in_a_sub_flow_path_is_one_line(canary: Canary) -> None:
    _refused(_caller(canary.root, '"leaf\\0.yaml"'), "NUL byte")


def test_a_self_recursive_sub_flow_is_refused_naming_the_file(canary: Canary) -> None:
    flow = _caller(canary.root, "main.yaml")
    _refused(flow, "in a loop", f"{flow} -> {flow}")


def test_mutually_recursive_sub_flows_are_refused_naming_the_chain(canary: Canary) -> None:
    a = _caller(canary.root, "b.yaml", "a.yaml")
    b = _caller(canary.root, "a.yaml", "b.yaml")
    _refused(a, "in a loop", f"{b} -> {a} -> {b}")


RETRIEVE = """
inputs: {q: {type: str, default: canary}}
outputs: {text: $find.text}
nodes:
  find: {type: retrieve.fts, inputs: {query: $inputs.q}, config: CONFIG}
"""


@pytest.mark.parametrize(
    "config",
    ["{documents: ..}", "{documents: docs}", "{db: ../store.db, table: secrets}", "{documents: /etc}"],
)
async def test_retrieve_never_reads_outside_the_root(config: str, canary: Canary) -> None:
    docs = canary.root / "docs"
    docs.mkdir()
    (docs / "fine.md").write_text("# fine\nnothing to see")
    (docs / "leak.md").symlink_to(canary.secret_file)
    (canary.root.parent / "leak.txt").write_text(SECRET)
    result, store = await run_flow(RETRIEVE.replace("CONFIG", config), path=canary.root / "flow.yaml")
    assert result.status == "failed" and "outside the project root" in str(result.error), result.error
    assert store.steps(result.run_id)[0].error_kind == "blocked"
    assert SECRET not in str(result.outputs) and canary.untouched()


async def test_retrieve_documents_are_read_with_a_size_cap(canary: Canary, monkeypatch: pytest.MonkeyPatch) -> None:
    import nodes.retrieve_fts as fts

    monkeypatch.setattr(fts, "MAX_DOCUMENT_BYTES", 1000)
    docs = canary.root / "docs"
    docs.mkdir()
    (docs / "big.md").write_text("x" * 5000)
    result, _ = await run_flow(RETRIEVE.replace("CONFIG", "{documents: docs}"), path=canary.root / "flow.yaml")
    assert result.status == "failed" and "larger than 1000 bytes" in str(result.error)


@pytest.mark.parametrize("where", ["outside the project", "elsewhere in the project", "a linked folder"])
def test_index_refuses_a_symlink_out_of_the_folder(canary: Canary, where: str) -> None:
    docs = canary.root / "docs"
    docs.mkdir()
    (docs / "fine.md").write_text("# fine\nhello")
    if where == "outside the project":
        (docs / "leak.md").symlink_to(canary.secret_file)
    elif where == "elsewhere in the project":
        (canary.root / "private.md").write_text(SECRET)
        (docs / "leak.md").symlink_to(canary.root / "private.md")
    else:
        (docs / "more").symlink_to(canary.secret_file.parent)
    db = canary.root / "index.db"
    result = CliRunner().invoke(main, ["index", str(docs), "--table", "docs", "--db", str(db)])
    assert result.exit_code == 2 and "outside the folder being indexed" in result.output, result.output
    assert "Traceback" not in result.output
    if db.exists():
        with sqlite3.connect(db) as conn:
            tables = [r[0] for r in conn.execute("select name from sqlite_master")]
        assert "docs" not in tables
    assert canary.untouched()


def test_export_refuses_a_file_outside_the_root(canary: Canary, tmp_path: Path) -> None:
    (canary.root.parent / "script.yaml").write_text(f"script:\n  - {{reply: {SECRET}}}\n")
    flow = canary.root / "flow.yaml"
    flow.write_text(
        HEADER + "models: {default: {model: scripted/../script.yaml}}\n"
        "nodes:\n  g: {type: llm.generate, config: {prompt: hi}}\n"
    )
    out = tmp_path / "out"
    with pytest.raises(FlowError, match="outside the project root"):
        export_flow(flow, out)
    assert not any(SECRET in p.read_text() for p in out.rglob("*") if p.is_file())
    assert canary.untouched()


def test_export_force_never_writes_through_a_planted_symlink(canary: Canary, tmp_path: Path) -> None:
    flow = canary.root / "flow.yaml"
    flow.write_text(HEADER + "nodes:\n  t: {type: text.template, config: {template: hi}}\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "README.md").symlink_to(canary.secret_file)
    with pytest.raises(FlowError, match="symbolic link"):
        export_flow(flow, out, force=True)
    assert canary.secret_file.read_text() == SECRET and canary.untouched()
