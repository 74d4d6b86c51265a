"""A `postgresql://` URL, given as FLOWSTUDIO_DB or `--db`, opens the PostgreSQL store in every
command that opens a store: batch, optimize, review, publish/versions/tag, `serve --published`,
`mcp serve` and the studio (its pages and the batches it launches). Real subprocesses, a real server."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import psycopg
import pytest
from streamlit.testing.v1 import AppTest

from studio.app.settings import DIR_ENV
from tests.conftest import FLOWS, FLOWSTUDIO, SCRIPTS, Result
from tests.serve.conftest import Server
from tests.versions.project import make

TRIAGE = str(FLOWS / "ticket-triage.yaml")
SCRIPT = f"default=scripted/{SCRIPTS / 'triage.yaml'}"
DATA = str(FLOWS / "data" / "triage-labelled.jsonl")


def _cli(cwd: Path, url: str, *args: str) -> Result:
    """`flowstudio ARGS` in `cwd` with FLOWSTUDIO_DB set to the URL (no --db)."""
    env = {**os.environ, "FLOWSTUDIO_DB": url}
    done = subprocess.run([FLOWSTUDIO, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=180)
    return Result(done.returncode, done.stdout, done.stderr)


def _count(url: str, table: str) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # type: ignore[index]


def test_batch_optimize_review_and_versions_write_to_the_url_in_flowstudio_db(
    tmp_path: Path, postgres_url: str
) -> None:
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text('{"ticket": "The app crashes", "category": "bug"}\n{"ticket": "It hangs", "category": "bug"}\n')
    batch = _cli(tmp_path, postgres_url, "batch", TRIAGE, "--data", str(wrong), "--expect", "category=category",
                 "--model", SCRIPT, "--json")  # fmt: skip
    assert batch.code == 0, batch.err
    search = _cli(
        tmp_path, postgres_url, "optimize", TRIAGE, "--train", DATA, "--dev", DATA, "--metric", "exact",
        "--expect", "category=category", "--budget-calls", "60", "--minibatch", "4", "--proposer", "none",
        "--model", SCRIPT, "--out", str(tmp_path / "better.yaml"), "--json",
    )  # fmt: skip
    assert search.code == 0, search.err
    kinds = {e["kind"] for e in _cli(tmp_path, postgres_url, "experiments", "--json").json()}
    assert {"batch", "optimize"} <= kinds
    run_id = _cli(tmp_path, postgres_url, "runs", "--json").json()[0]["run_id"]
    review = _cli(tmp_path, postgres_url, "review", run_id[:8], "--verdict", "good", "--json")
    assert review.code == 0, review.err
    assert [r["run_id"] for r in _cli(tmp_path, postgres_url, "runs", "--reviewed", "--json").json()] == [run_id]
    rows = _cli(tmp_path, postgres_url, "dataset", "from-reviews", "ticket-triage", "--out", "reviewed.jsonl")
    assert rows.code == 0, rows.err
    assert len((tmp_path / "reviewed.jsonl").read_text().splitlines()) == 1

    main = make(tmp_path / "project")
    published = _cli(tmp_path, postgres_url, "publish", str(main), "--tag", "v1", "--json")
    assert published.code == 0, published.err
    version = published.json()["version"]
    assert _cli(tmp_path, postgres_url, "tag", f"greet@{version[:8]}", "prod").code == 0
    listed = _cli(tmp_path, postgres_url, "versions", "greet", "--json").json()
    assert [(r["version"], sorted(r["tags"])) for r in listed] == [(version, ["prod", "v1"])]
    pinned = _cli(tmp_path, postgres_url, "run", "greet@v1", "-i", "word=hi", "--json")
    assert pinned.code == 0 and pinned.json()["outputs"]["loud"] == "HI!", pinned.err
    assert _count(postgres_url, "feedback") == 1 and _count(postgres_url, "versions") == 1
    assert not list(tmp_path.glob("**/*.db"))  # no SQLite file anywhere: everything went to the server
    assert (tmp_path / ".flowstudio" / "versions").is_dir()  # the materialised version: local, beside the cwd


def test_serve_published_serves_versions_from_postgresql(tmp_path: Path, postgres_url: str) -> None:
    main = make(tmp_path / "project")
    assert _cli(tmp_path, postgres_url, "publish", str(main), "--tag", "prod").code == 0
    (main.parent / "sub" / "shout.yaml").write_text((main.parent / "sub" / "shout.yaml").read_text().replace("!", "?"))
    command = [FLOWSTUDIO, "serve", str(main.parent), "--published", "--port", "0", "--db", postgres_url]
    server = Server(command, cwd=tmp_path).start()
    try:
        flows = httpx.get(f"{server.url}/flows", timeout=30).json()
        answer = httpx.post(f"{server.url}/flows/greet/runs", json={"inputs": {"word": "hi"}}, timeout=60)
    finally:
        server.stop()
    assert [f["name"] for f in flows] == ["greet"], flows
    assert answer.status_code == 200, answer.text
    assert answer.json()["outputs"]["loud"] == "HI!"  # the published version, not the edited file
    assert _count(postgres_url, "runs") == 1


@pytest.mark.slow  # starts `flowstudio mcp serve`
async def test_mcp_serve_stores_its_runs_in_postgresql(tmp_path: Path, postgres_url: str) -> None:
    from mcp import Client, StdioServerParameters

    folder = Path(__file__).parents[1] / "mcp" / "flows"
    params = StdioServerParameters(
        command=FLOWSTUDIO, args=["mcp", "serve", str(folder)], env={"FLOWSTUDIO_DB": postgres_url}, cwd=tmp_path
    )
    async with Client(params) as client:
        result = await client.call_tool("chain", {"topic": "cats"})
    assert result.structured_content == {"headline": "SUNNY DAYS AHEAD!", "draft": "sunny days ahead"}
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT flow, status FROM runs").fetchall() == [("chain", "succeeded")]


def test_the_studio_on_a_url_reads_it_and_its_launches_write_to_it(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from studio.app import launches
    from studio.app.settings import open_store, settings
    from studio.cli.launch import studio_env
    from studio.store.postgres import PostgresStore
    from tests.app.launch_seed import slow_folder

    env = studio_env(postgres_url, tmp_path)  # what `flowstudio studio --db URL` hands the app
    assert env["FLOWSTUDIO_DB"] == postgres_url
    monkeypatch.setenv("FLOWSTUDIO_DB", env["FLOWSTUDIO_DB"])
    monkeypatch.chdir(tmp_path)
    assert settings().db == postgres_url
    folder = slow_folder(tmp_path, delay_s=0.0, copies=1)
    launch = launches.start(settings().db, "batch", str(folder / "qa.yaml"), ["--data", "data/qa.jsonl"], cwd=folder)
    deadline = time.monotonic() + 90
    while launches.alive(launch.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    with open_store() as store:
        assert isinstance(store, PostgresStore)
        (experiment,) = store.list_experiments()
        runs = store.runs_of_experiment(experiment.experiment_id)
    assert (experiment.summary or {}).get("status") == "finished", launches.log_tail(launch)
    assert len(runs) == 4
    assert launches.state(experiment, launch) == "finished"
    assert json.loads(Path(launch.log).with_suffix(".json").read_text())["argv"][-1] == postgres_url
    monkeypatch.setenv(DIR_ENV, str(folder))
    for page in (_runs_page, _experiments_page):  # the pages read the server's runs and experiments
        app = AppTest.from_function(page, default_timeout=60)
        app.run()
        assert not app.exception, app.exception
        shown = " ".join(str(e.value) for e in [*app.markdown, *app.caption, *app.dataframe])
        assert experiment.experiment_id[:8] in shown or runs[0].run_id[:8] in shown, shown[:2000]
    assert not list(tmp_path.glob("**/*.db"))


def _runs_page() -> None:
    from studio.app.runs_page import render

    render()


def _experiments_page() -> None:
    from studio.app.experiments_page import render

    render()
