"""`serve --published` answers with the version tagged prod while the file changes, and switches
when the tag moves; `/flows/NAME@TAG/runs` runs a pinned version (real server, real subprocess)."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.conftest import CLI
from tests.serve.conftest import Server, serve_command
from tests.versions.project import edit, make


def _loud(client: httpx.Client, name: str) -> str:
    done = client.post(f"/flows/{name}/runs", json={"inputs": {"word": "hi"}})
    assert done.status_code == 200, done.text
    return str(done.json()["outputs"]["loud"])


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
            assert _loud(client, "greet") == "hi?"  # a moved tag is immediate for new runs
            assert _loud(client, f"greet@{v1[:8]}") == "HI!"  # a pinned version
            listed = client.get("/flows").json()
            assert [f["name"] for f in listed] == ["greet"]
            missing = client.post("/flows/greet@nope/runs", json={"inputs": {"word": "hi"}})
            assert missing.status_code == 404
    finally:
        server.stop()
    pinned = cli("runs", "--version", v1[:12], "--json").json()
    assert len(pinned) == 4 and all(r["version"] == v1 for r in pinned)
