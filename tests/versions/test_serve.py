"""`serve --published` answers with the version tagged prod while the file changes, and switches
when the tag moves; `/flows/NAME@TAG/runs` runs a pinned version; every run object names the
version it ran, the working files' content hash when not published (real server, real subprocess)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from studio.versions.snapshot import take
from tests.conftest import CLI
from tests.serve.conftest import Server, serve_command
from tests.versions.project import edit, make


def _run(client: httpx.Client, name: str) -> dict[str, Any]:
    done = client.post(f"/flows/{name}/runs", json={"inputs": {"word": "hi"}})
    assert done.status_code == 200, done.text
    run: dict[str, Any] = done.json()
    stored = client.get(f"/runs/{run['run_id']}").json()
    assert stored["version"] == run["version"], (stored, run)
    return run


def _loud(client: httpx.Client, name: str) -> str:
    return str(_run(client, name)["outputs"]["loud"])


def test_published_serving_keeps_v1_while_the_file_changes_and_follows_the_tag(cli: CLI, tmp_path: Path) -> None:
    make(tmp_path / "project")
    main = tmp_path / "project" / "greet.yaml"
    v1 = cli("publish", str(main), "--tag", "prod", "--json").json()["version"]
    server = Server(serve_command(tmp_path / "project", tmp_path / "flowstudio.db", "--published")).start()
    try:
        with server.client() as client:
            assert _loud(client, "greet") == "HI!"
            edit(tmp_path / "project" / "sub" / "shout.yaml", "upper }}!", "lower }}?")
            assert _loud(client, "greet") == "HI!"  # the edited file is not what is served
            v2 = cli("publish", str(main), "--json").json()["version"]
            assert _loud(client, "greet") == "HI!"  # a publish without the tag changes nothing served
            assert cli("tag", f"greet@{v2[:8]}", "prod").code == 0
            moved = _run(client, "greet")
            assert (moved["outputs"]["loud"], moved["version"]) == ("hi?", v2)  # a moved tag is immediate
            pinned = _run(client, f"greet@{v1[:8]}")
            assert (pinned["outputs"]["loud"], pinned["version"]) == ("HI!", v1)  # a pinned version
            listed = client.get("/flows").json()
            assert [f["name"] for f in listed] == ["greet"]
            missing = client.post("/flows/greet@nope/runs", json={"inputs": {"word": "hi"}})
            assert missing.status_code == 404
    finally:
        server.stop()
    pinned = cli("runs", "--version", v1[:12], "--json").json()
    assert len(pinned) == 4 and all(r["version"] == v1 for r in pinned)


def test_a_working_file_served_records_its_content_hash_the_id_publish_would_give(cli: CLI, tmp_path: Path) -> None:
    main = make(tmp_path / "project")
    server = Server(serve_command(tmp_path / "project", tmp_path / "flowstudio.db")).start()
    try:
        with server.client() as client:
            first = _run(client, "greet")
            assert first["version"] == take(main).version_id
            edit(main, "politely.", "warmly.")
            second = _run(client, "greet")
            assert second["version"] == take(main).version_id != first["version"]
            listed = client.get("/runs/" + first["run_id"]).json()
            assert listed["flow"] == "greet" and listed["version"] == first["version"]
    finally:
        server.stop()
    published = cli("publish", str(main), "--json").json()["version"]
    assert published == second["version"]  # publishing the files served names the runs they made
    shown = cli("runs", "--version", published[:8], "--json").json()
    assert [r["run_id"] for r in shown] == [second["run_id"]]
    table = cli("runs", "--version", published[:8], env={"COLUMNS": "120"})
    assert published[:8] in table.out and first["version"][:8] not in table.out
