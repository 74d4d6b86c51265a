"""`publish`, `versions`, `run NAME@TAG`, `runs --version`, `tag`/`untag`, `diff` and `promote`, as real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import CLI
from tests.versions.project import edit, make


def _publish(cli: CLI, main: Path, *args: str) -> str:
    done = cli("publish", str(main), *args, "--json")
    assert done.code == 0, done.err
    return str(done.json()["version"])


def test_publish_prints_the_id_and_tag_and_versions_lists_them(cli: CLI, tmp_path: Path) -> None:
    main = make(tmp_path)
    done = cli("publish", str(main), "--tag", "v1", "--note", "first cut", "--author", "ann")
    assert done.code == 0, done.err
    assert done.out.startswith("published greet@") and "tag v1 -> " in done.out
    first = _publish(cli, main)
    assert first.startswith(done.out.split("@")[1][:12])  # unchanged content: the same id
    edit(tmp_path / "sub" / "shout.yaml", "upper }}!", "upper }}!!")
    again = cli("publish", str(main), "--tag", "v2", "--json", env={"LOGNAME": "bob", "USER": "bob"})
    second = str(again.json()["version"])
    assert second != first and again.json()["author"] == "bob"
    listed = cli("versions", "greet", "--json")
    rows = listed.json()
    assert [(r["version"], r["tags"], r["note"], r["author"]) for r in rows] == [
        (second, ["v2"], None, "bob"),  # nobody said: the publisher's $USER
        (first, ["v1"], "first cut", "ann"),  # the first publish's author stays with the content
    ]
    shown = cli("versions", "greet")
    assert f"{first[:12]}" in shown.out and "[v1]  by ann  first cut" in shown.out


def test_run_of_a_tag_runs_the_published_version_after_the_file_changed(cli: CLI, tmp_path: Path) -> None:
    main = make(tmp_path)
    v1 = _publish(cli, main, "--tag", "v1")
    edit(tmp_path / "sub" / "shout.yaml", "upper }}!", "lower }}?")
    pinned = cli("run", "greet@v1", "-i", "word=hi", "--json")
    assert pinned.code == 0, pinned.err
    assert pinned.json()["outputs"]["loud"] == "HI!"
    by_id = cli("run", f"greet@{v1[:8]}", "-i", "word=hi", "--json")
    assert by_id.json()["outputs"]["loud"] == "HI!"
    working = cli("run", str(main), "-i", "word=hi", "--json")
    assert working.json()["outputs"]["loud"] == "hi?"
    runs = cli("runs", "--version", v1[:8], "--json").json()
    assert sorted(r["run_id"] for r in runs) == sorted([pinned.json()["run_id"], by_id.json()["run_id"]])
    assert all(r["version"] == v1 for r in runs)
    working_run = cli("runs", "--json").json()[0]
    assert working_run["run_id"] == working.json()["run_id"] and working_run["version"] not in (None, v1)
    trace = cli("trace", pinned.json()["run_id"])
    assert f"version {v1[:12]}" in trace.out


def test_an_unknown_reference_is_bad_input(cli: CLI, tmp_path: Path) -> None:
    make(tmp_path)
    done = cli("run", "greet@prod", "-i", "word=hi")
    assert done.code == 2 and "no published version" in done.err


def test_tag_moves_back_for_a_roll_back_and_untag_removes(cli: CLI, tmp_path: Path) -> None:
    main = make(tmp_path)
    v1 = _publish(cli, main, "--tag", "prod")
    edit(tmp_path / "sub" / "shout.yaml", "upper }}!", "lower }}?")
    v2 = _publish(cli, main, "--tag", "prod")
    assert cli("run", "greet@prod", "-i", "word=hi", "--json").json()["outputs"]["loud"] == "hi?"
    moved = cli("tag", f"greet@{v1[:10]}", "prod")
    assert moved.code == 0 and f"(was {v2[:12]})" in moved.out
    assert cli("run", "greet@prod", "-i", "word=hi", "--json").json()["outputs"]["loud"] == "HI!"
    assert cli("untag", "greet@prod").code == 0
    gone = cli("untag", "greet@prod")
    assert gone.code == 2 and "no tag 'prod'" in gone.err
    assert cli("tag", f"greet@{v1[:10]}", "1bad").code == 2


def test_diff_of_two_references_names_the_changed_node_field_and_file(cli: CLI, tmp_path: Path) -> None:
    main = make(tmp_path)
    _publish(cli, main, "--tag", "v1")
    edit(main, "politely.", "warmly.")
    edit(tmp_path / "sub" / "shout.yaml", "upper }}!", "upper }}!!")
    _publish(cli, main, "--tag", "v2")
    shown = cli("diff", "greet@v1", "greet@v2")
    assert shown.code == 0, shown.err
    assert "~ node say: config.prompt" in shown.out and "+Say {{ word }} warmly." in shown.out
    assert "~ file sub/shout.yaml" in shown.out
    data = cli("diff", "greet@v1", str(main), "--json").json()
    assert [(c["node"], c["field"]) for c in data["nodes"]["changed"]] == [("say", "config.prompt")]


def test_promote_refuses_a_worse_candidate_and_moves_the_tag_for_a_good_one(cli: CLI, tmp_path: Path) -> None:
    main = make(tmp_path / "p")
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"word": w, "want": f"{w.upper()}!"}) + "\n" for w in ("hi", "yo", "ok")))
    good = _publish(cli, main, "--tag", "prod")
    edit(tmp_path / "p" / "sub" / "shout.yaml", "{{ item | upper }}!", "no {{ item }}")
    worse = _publish(cli, main)
    args = ("--tag", "prod", "--data", str(data), "--expect", "loud=want", "--map", "word=word")
    refused = cli("promote", f"greet@{worse[:8]}", *args, "--json")
    assert refused.code == 1, refused.err
    decided = refused.json()
    assert not decided["promoted"]
    assert (decided["candidate"]["score"], decided["current"]["score"]) == (0.0, 1.0)
    assert cli("versions", "greet", "--json").json()[1]["tags"] == ["prod"]  # prod stays on the good one
    edit(tmp_path / "p" / "sub" / "shout.yaml", "no {{ item }}", "{{ item | upper }}!")
    edit(main, "politely.", "kindly.")
    equal = _publish(cli, main)
    promoted = cli("promote", f"greet@{equal[:8]}", *args)
    assert promoted.code == 0, promoted.err + promoted.out
    assert f"promoted: prod -> {equal[:12]}" in promoted.out
    assert cli("run", "greet@prod", "-i", "word=hi", "--json").json()["outputs"]["said"] == "hello"
    scored = {row["version"]: row["batches"] for row in cli("versions", "greet", "--json").json()}
    assert scored[good][0]["score"] == 1.0 and scored[worse][0]["score"] == 0.0


def test_export_of_a_reference_embeds_the_published_files(cli: CLI, tmp_path: Path) -> None:
    main = make(tmp_path / "p")
    _publish(cli, main, "--tag", "v1")
    edit(tmp_path / "p" / "sub" / "shout.yaml", "upper }}!", "lower }}?")
    done = cli("export", "greet@v1", "--out", str(tmp_path / "out"), "--no-engine-wheel", "--json")
    assert done.code == 0, done.err
    assert "upper }}!" in (tmp_path / "out" / "greet" / "flows" / "sub" / "shout.yaml").read_text()


def test_batch_of_a_tag_scores_the_published_version_and_versions_shows_the_score(cli: CLI, tmp_path: Path) -> None:
    main = make(tmp_path / "p")
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"word": w, "want": f"{w.upper()}!"}) + "\n" for w in ("hi", "yo")))
    v1 = _publish(cli, main, "--tag", "v1")
    edit(tmp_path / "p" / "sub" / "shout.yaml", "{{ item | upper }}!", "no {{ item }}")  # the file now scores 0
    args = ("--data", str(data), "--expect", "loud=want", "--map", "word=word", "--json")
    pinned = cli("batch", "greet@v1", *args)
    assert pinned.code == 0, pinned.err
    assert pinned.json()["score"] == 1.0
    assert cli("batch", str(main), *args).json()["score"] == 0.0
    (row,) = cli("versions", "greet", "--json").json()
    assert row["version"] == v1 and [b["score"] for b in row["batches"]] == [1.0]
    assert len(cli("runs", "--version", v1[:8], "--json").json()) == 2
