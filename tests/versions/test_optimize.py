"""`optimize --publish` stores the best flow as a version; `optimize NAME@TAG` searches from a published one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from studio.cli import main
from tests.optimize.conftest import DEMO_RULES, HEADER, NOTHING_RULES, rows, write_jsonl

FLOW = "opt-task"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scripted flow answered right only with a demo in its prompt, its train and dev sets."""
    monkeypatch.setenv("FLOWSTUDIO_SCRIPTED_LEDGER", str(tmp_path / "ledger.jsonl"))
    project = tmp_path / "project"
    project.mkdir()
    (project / "flow.yaml").write_text(HEADER.format(name="task", rules=DEMO_RULES))
    write_jsonl(project / "train.jsonl", rows(12, 0))
    write_jsonl(project / "dev.jsonl", rows(16, 1))
    return project


def _cli(folder: Path, *args: str) -> Any:
    return CliRunner().invoke(main, [*args, "--db", str(folder / "flowstudio.db")])


def _optimize(folder: Path, flow: str, *extra: str) -> Any:
    sets = ("--train", str(folder / "train.jsonl"), "--dev", str(folder / "dev.jsonl"))
    return _cli(folder, "optimize", flow, *sets, "--metric", "exact", "--budget-calls", "120", "--minibatch", "4",
                *extra)  # fmt: skip


def test_publish_stores_the_best_flow_as_a_version_of_the_input_file(folder: Path) -> None:
    done = _optimize(folder, str(folder / "flow.yaml"), "--publish", "--tag", "best", "--json")
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    published = data["published"]
    assert (published["flow"], published["tag"], published["new"]) == (FLOW, "best", True)
    assert published["files"] == ["flow.yaml"]  # the optimized file, published as a version of flow.yaml
    (row,) = json.loads(_cli(folder, "versions", FLOW, "--json").stdout)
    assert row["version"] == published["version"] and row["tags"] == ["best"]
    assert row["note"].startswith(f"optimize {data['experiment_id']} from ") and "-> 1.000" in row["note"]
    ran = _cli(folder, "run", f"{FLOW}@best", "-i", "text=the lamp 7 was good", "--json")
    assert json.loads(ran.stdout)["outputs"] == {"label": "positive"}  # the working file answers unsure
    said = _optimize(folder, str(folder / "flow.yaml"), "--publish")  # replayed from the LLM cache
    assert said.exit_code == 0, said.output
    assert f"already published as {FLOW}@{published['version'][:12]}" in said.stdout


def test_a_published_version_is_optimized_and_the_working_file_is_not_read(folder: Path) -> None:
    first = _cli(folder, "publish", str(folder / "flow.yaml"), "--tag", "v1", "--json")
    v1 = json.loads(first.stdout)["version"]
    (folder / "flow.yaml").write_text(HEADER.format(name="task", rules=NOTHING_RULES))  # wrong whatever the prompt
    done = _optimize(folder, f"{FLOW}@v1", "--publish", "--json")
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    assert data["after"]["dev"] == 1.0
    assert Path(data["flow_out"]).parent.name == v1  # written beside the version's own files
    assert data["published"]["tag"] is None and data["published"]["version"] != v1
    newest = json.loads(_cli(folder, "versions", FLOW, "--json").stdout)[0]
    assert f"from {v1[:12]}" in newest["note"]


def test_a_tag_without_publish_or_an_unknown_reference_is_bad_input(folder: Path) -> None:
    alone = _optimize(folder, str(folder / "flow.yaml"), "--tag", "best")
    assert alone.exit_code == 2 and "give --publish too" in alone.output
    missing = _optimize(folder, f"{FLOW}@v9")
    assert missing.exit_code == 2 and "no published version" in missing.output
