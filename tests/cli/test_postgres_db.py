"""`--db postgresql://...` and FLOWSTUDIO_DB as a URL, through real subprocesses on a real PostgreSQL."""

from __future__ import annotations

from tests.conftest import CLI, FIXTURES

CHAIN = str(FIXTURES / "chain.yaml")


def test_run_then_runs_and_trace_on_postgresql(cli: CLI, postgres_url: str) -> None:
    result = cli("run", CHAIN, "-i", "topic=rain", "--json", "--db", postgres_url)
    assert result.code == 0, result.err
    run_id = result.json()["run_id"]

    (listed,) = cli("runs", "--json", "--db", postgres_url).json()
    assert listed["run_id"] == run_id and listed["status"] == "succeeded" and listed["tokens"] == 9
    assert cli("runs", "--json").json() == []  # the SQLite file the fixture set was not written

    steps = cli("trace", run_id[:6], "--json", env={"FLOWSTUDIO_DB": postgres_url}).json()
    assert [s["node"] for s in steps] == ["ask", "write", "shout"]
    assert steps[1]["outputs"] == {"text": "sunny days ahead"}


def test_an_unreachable_server_is_bad_input(cli: CLI, postgres_server: object) -> None:
    result = cli("runs", "--db", "postgresql://nobody:secret@127.0.0.1:1/none")
    assert result.code == 2
    assert "cannot reach PostgreSQL at postgresql://nobody:***@127.0.0.1:1/none" in result.err
    assert "secret" not in result.err
