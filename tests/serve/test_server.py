"""`flowstudio serve` as a real process, driven with httpx, httpx-sse and the official openai client."""

from __future__ import annotations

import asyncio
import fcntl
import json
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from httpx_sse import ServerSentEvent, connect_sse

from studio.export import export_flow
from studio.models.scripted import LEDGER_ENV
from tests.conftest import FLOWSTUDIO, ROOT
from tests.serve.conftest import Server, serve_command

pytestmark = pytest.mark.slow
RUN_KEYS = {"run_id", "status", "outputs", "error", "tokens", "cost_usd", "steps", "version"}


def events_of(client: httpx.Client, method: str, url: str, **kwargs: Any) -> list[ServerSentEvent]:
    with connect_sse(client, method, url, **kwargs) as source:
        assert source.response.status_code == 200, source.response.read()
        assert source.response.headers["content-type"].startswith("text/event-stream")
        return list(source.iter_sse())


def key(event_id: str) -> tuple[int, int]:
    major, _, minor = event_id.partition(".")
    return int(major), int(minor or 0)


def wait_for(check: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("timed out")


def cli(*args: str, db: Path) -> Any:
    done = subprocess.run([FLOWSTUDIO, *args, "--db", str(db), "--json"], capture_output=True, text=True, cwd=ROOT)
    return json.loads(done.stdout)


def test_health_flows_wait_mode_and_the_cli_sees_the_run(server: Server) -> None:
    with server.client() as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        flows = {f["name"]: f for f in client.get("/flows").json()}
        assert set(flows) == {"approval", "reply", "steps"}
        steps = flows["steps"]
        assert steps["inputs"]["properties"]["count"] == {
            "type": "integer",
            "description": "How many points",
            "default": 2,
        }
        assert steps["inputs"]["properties"]["tags"]["type"] == "array"
        assert steps["inputs"]["required"] == ["topic"]
        assert flows["reply"]["outputs"]["properties"] == {"answer": {"type": "string"}}

        done = client.post("/flows/reply/runs", json={"inputs": {"question": "capital of France?"}})
        assert done.status_code == 200
        run = done.json()
        assert set(run) == RUN_KEYS and run["status"] == "succeeded"
        assert run["outputs"] == {"answer": "Paris is the capital of France."}
        assert [s["node"] for s in run["steps"]] == ["prompt", "answer"]

        stored = client.get(f"/runs/{run['run_id']}").json()
        assert stored["status"] == "succeeded" and stored["outputs"] == run["outputs"] and stored["flow"] == "reply"
        trace = client.get(f"/runs/{run['run_id']}/trace").json()
    db = Path(server.command[server.command.index("--db") + 1])
    assert trace == cli("trace", run["run_id"], db=db)
    assert run["run_id"] in {r["run_id"] for r in cli("runs", db=db)}


def test_stream_mode_sends_every_event_with_an_id(server: Server) -> None:
    with server.client() as client:
        body = {"inputs": {"topic": "streams"}, "mode": "stream"}
        events = events_of(client, "POST", "/flows/steps/runs", json=body)
    names = [e.event for e in events if e.event != "token"]
    assert names == ["run_started"] + ["step_started", "step_finished"] * 3 + ["run_finished"]
    tokens = [json.loads(e.data) for e in events if e.event == "token"]
    assert [(t["node"], t["text"]) for t in tokens] == [("first", "one"), ("second", "two"), ("third", "three")]
    keys = [key(e.id) for e in events if e.event != "token"]
    assert all(e.id for e in events) and keys == sorted(keys) and len(set(keys)) == len(keys)
    finished = json.loads(events[-1].data)
    assert finished["status"] == "succeeded" and finished["outputs"] == {"final": "three", "count": 2}
    assert [json.loads(e.data)["node"] for e in events if e.event == "step_finished"] == ["first", "second", "third"]


def test_background_run_202_then_events_live_and_replayed_after_last_event_id(server: Server) -> None:
    with server.client() as client:
        started = client.post("/flows/steps/runs", json={"inputs": {"topic": "later"}, "mode": "background"})
        assert started.status_code == 202 and set(started.json()) == {"run_id"}
        run_id = started.json()["run_id"]
        live = events_of(client, "GET", f"/runs/{run_id}/events")
        assert live[-1].event == "run_finished" and json.loads(live[-1].data)["status"] == "succeeded"
        assert [e.event for e in live].count("step_finished") == 3
        replayed = events_of(client, "GET", f"/runs/{run_id}/events")
        assert [(e.id, e.event) for e in replayed] == [
            ("0", "run_started"),
            ("0.1", "step_started"),
            ("2", "step_finished"),
            ("2.1", "step_started"),
            ("4", "step_finished"),
            ("4.1", "step_started"),
            ("6", "step_finished"),
            ("6.1", "run_finished"),
        ]
        assert [(e.id, e.event, e.data) for e in live] == [(e.id, e.event, e.data) for e in replayed]
        after = events_of(client, "GET", f"/runs/{run_id}/events", headers={"Last-Event-ID": "4"})
        assert [e.id for e in after] == ["4.1", "6", "6.1"]
        bad = client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": "soon"})
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["header", "Last-Event-ID"]


def test_bad_input_is_422_naming_the_field_and_unknown_names_404(server: Server) -> None:
    with server.client() as client:

        def refused(path: str, body: dict[str, Any]) -> list[str]:
            answer = client.post(path, json=body)
            assert answer.status_code == 422, answer.text
            return [str(part) for part in answer.json()["detail"][0]["loc"]]

        assert refused("/flows/steps/runs", {"inputs": {"topic": "x", "count": "many"}}) == ["body", "inputs", "count"]
        assert refused("/flows/steps/runs", {"inputs": {}}) == ["body", "inputs", "topic"]
        assert refused("/flows/steps/runs", {"inputs": {"topic": "x", "colour": 1}}) == ["body", "inputs", "colour"]
        assert refused("/flows/steps/runs", {"inputs": {"topic": "x"}, "mode": "fast"}) == ["body", "mode"]
        assert refused("/flows/steps/runs", {"inputs": {"topic": "x"}, "speed": 1}) == ["body", "speed"]
        missing = {"inputs": {"topic": "x"}, "models": {"default": "scripted/missing.yaml"}}
        assert refused("/flows/steps/runs", missing) == ["body", "models", "default"]
        assert client.post("/flows/nope/runs", json={}).status_code == 404
        assert "steps" in client.post("/flows/nope/runs", json={}).json()["detail"]
        for method, path in [
            ("GET", "/runs/0000/"),
            ("GET", "/runs/0000/events"),
            ("GET", "/runs/0000/trace"),
            ("POST", "/runs/0000/cancel"),
        ]:
            assert client.request(method, path.rstrip("/")).status_code == 404, path
        assert client.post("/runs/0000/resume", json={"values": {}}).status_code == 404


def test_a_waiting_run_is_resumed_over_http(server: Server) -> None:
    with server.client() as client:
        waiting = client.post("/flows/approval/runs", json={"inputs": {"topic": "cats"}}).json()
        run_id = waiting["run_id"]
        assert waiting["status"] == "waiting" and waiting["outputs"] is None
        events = events_of(client, "GET", f"/runs/{run_id}/events")
        assert [e.event for e in events][-2:] == ["waiting", "run_finished"]
        assert json.loads(events[-2].data)["nodes"] == [{"node": "approve", "prompt": "Publish this? A short draft."}]

        wrong = client.post(f"/runs/{run_id}/resume", json={"values": {"draft": True}})
        assert wrong.status_code == 422 and wrong.json()["detail"][0]["loc"] == ["body", "values"]
        resumed = client.post(f"/runs/{run_id}/resume", json={"values": {"approve": True}})
        assert resumed.status_code == 200
        assert resumed.json()["status"] == "succeeded"
        assert resumed.json()["outputs"] == {"published": "PUBLISHED: A short draft."}
        assert client.post(f"/runs/{run_id}/resume", json={"values": {}}).status_code == 409
        trace = client.get(f"/runs/{run_id}/trace").json()
        assert [(s["node"], s["status"]) for s in trace] == [
            ("draft", "succeeded"),
            ("approve", "waiting"),
            ("approve", "succeeded"),
            ("publish", "succeeded"),
        ]
        again = events_of(client, "GET", f"/runs/{run_id}/events", headers={"Last-Event-ID": events[-1].id})
        assert [e.event for e in again] == [
            "run_started",  # the resume's, sent after the events the run stopped with
            "step_started",
            "step_finished",
            "step_started",
            "step_finished",
            "run_finished",
        ]


def test_cancel_stops_a_background_run_between_steps(server: Server) -> None:
    with server.client() as client:
        run_id = client.post("/flows/steps/runs", json={"inputs": {"topic": "stop"}, "mode": "background"}).json()[
            "run_id"
        ]
        wait_for(lambda: client.get(f"/runs/{run_id}/trace").json())
        cancelled = client.post(f"/runs/{run_id}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        rows = client.get(f"/runs/{run_id}/trace").json()
        time.sleep(1.5)
        assert client.get(f"/runs/{run_id}/trace").json() == rows and len(rows) < 3
        assert client.get(f"/runs/{run_id}").json()["status"] == "cancelled"
        assert events_of(client, "GET", f"/runs/{run_id}/events")[-1].event == "run_finished"
        finished = client.post("/flows/reply/runs", json={"inputs": {"question": "q"}}).json()["run_id"]
        assert client.post(f"/runs/{finished}/cancel").status_code == 409


def test_openapi_has_one_request_and_one_response_schema_per_flow(server: Server) -> None:
    with server.client() as client:
        spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for prefix in ("Approval", "Reply", "Steps"):
        assert f"{prefix}RunRequest" in schemas and f"{prefix}Run" in schemas
    request = schemas["StepsRunRequest"]["properties"]["inputs"]
    assert request["properties"]["count"]["type"] == "integer" and request["required"] == ["topic"]
    outputs = schemas["StepsRun"]["properties"]["outputs"]["anyOf"][0]
    assert outputs["properties"] == {"final": {"type": "string"}, "count": {"type": "integer"}}
    operation = spec["paths"]["/flows/steps/runs"]["post"]
    assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("StepsRunRequest")


def test_the_openai_client_calls_a_flow(server: Server) -> None:
    chat = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
    asked = [{"role": "user", "content": "capital of France?"}]  # `reply` has no system input: see test_chat.py
    answer = chat.chat.completions.create(model="reply", messages=asked)  # type: ignore[arg-type]
    assert answer.choices[0].message.content == "Paris is the capital of France."
    assert answer.model == "reply" and answer.choices[0].finish_reason == "stop"
    streamed = chat.chat.completions.create(model="reply", messages=asked, stream=True)  # type: ignore[arg-type]
    chunks = list(streamed)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Paris is the capital of France."
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert [m.id for m in chat.models.list()] == ["reply"]  # approval waits for a person
    with pytest.raises(openai.NotFoundError):
        chat.chat.completions.create(model="nope", messages=asked)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError):
        chat.chat.completions.create(model="steps", messages=asked)  # type: ignore[arg-type]


def test_a_flow_edited_on_disk_is_served_on_the_next_request(server: Server) -> None:
    flow = Path(server.command[2]) / "reply.yaml"
    original = flow.read_text()
    try:
        with server.client() as client:
            flow.write_text(original.replace("Paris is the capital of France.", "Edited answer."))
            run = client.post("/flows/reply/runs", json={"inputs": {"question": "edited?"}}).json()
            assert run["outputs"] == {"answer": "Edited answer."}
            flow.write_text(original.replace("name: reply", "name: reply-two"))
            assert "reply-two" in {f["name"] for f in client.get("/flows").json()}
            assert client.post("/flows/reply/runs", json={"inputs": {"question": "q"}}).status_code == 404
    finally:
        flow.write_text(original)


def test_a_bearer_token_guards_every_route_but_healthz(tmp_path: Path, flows_dir: Path) -> None:
    env = {"SERVE_TOKEN": "s3cret-token"}
    guarded = Server(serve_command(flows_dir, tmp_path / "runs.db", "--token-env", "SERVE_TOKEN"), env=env).start()
    try:
        with guarded.client() as client:
            assert client.get("/healthz").status_code == 200
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret-token"}):
                for path in ("/flows", "/openapi.json", "/runs/x", "/v1/models"):
                    answer = client.get(path, headers=headers)
                    assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer", path
            assert client.get("/flows", headers={"Authorization": "Bearer s3cret-token"}).status_code == 200
        chat = openai.OpenAI(base_url=f"{guarded.url}/v1", api_key="s3cret-token", max_retries=0)
        asked = [{"role": "user", "content": "capital?"}]
        assert chat.chat.completions.create(model="reply", messages=asked).choices[0].message.content  # type: ignore[arg-type]
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"{guarded.url}/v1", api_key="nope", max_retries=0).models.list()
    finally:
        guarded.stop()
    public = subprocess.run(
        serve_command(flows_dir, tmp_path / "runs.db", "--host", "0.0.0.0"), capture_output=True, text=True, timeout=60
    )
    assert public.returncode == 2 and "without a token" in public.stderr
    unset = subprocess.run(
        serve_command(flows_dir, tmp_path / "runs.db", "--token-env", "NO_SUCH_VARIABLE_SET"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert unset.returncode == 2 and "NO_SUCH_VARIABLE_SET" in unset.stderr


def test_kill_9_mid_background_run_and_restart_finishes_it_from_its_checkpoints(
    tmp_path: Path, flows_dir: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    db = tmp_path / "runs.db"
    first = Server(serve_command(flows_dir, db), env={LEDGER_ENV: str(ledger)}).start()
    try:
        with first.client() as client:
            body = {"inputs": {"topic": "durable"}, "mode": "background"}
            run_id = client.post("/flows/steps/runs", json=body).json()["run_id"]
            wait_for(lambda: [s for s in client.get(f"/runs/{run_id}/trace").json() if s["status"] == "succeeded"])
        first.kill9()
    finally:
        first.stop()
    before = cli("trace", run_id, db=db)
    assert 1 <= len(before) < 3 and cli("runs", db=db)[0]["status"] == "interrupted"  # its process is gone
    second = Server(serve_command(flows_dir, db), env={LEDGER_ENV: str(ledger)}).start()
    try:
        with second.client() as client:
            done = wait_for(
                lambda: (
                    client.get(f"/runs/{run_id}").json()["status"] not in ("running", "interrupted")
                    and client.get(f"/runs/{run_id}").json()
                )
            )
            assert done["status"] == "succeeded" and done["outputs"] == {"final": "three", "count": 2}
            trace = client.get(f"/runs/{run_id}/trace").json()
            replayed = events_of(
                client, "GET", f"/runs/{run_id}/events", headers={"Last-Event-ID": str(2 * len(before))}
            )
    finally:
        second.stop()
    assert trace[: len(before)] == before
    assert [s["node"] for s in trace] == ["first", "second", "third"]
    calls = [json.loads(line)["prompt"].split()[0] for line in ledger.read_text().splitlines()]
    finished_before = {s["node"] for s in before}
    assert not finished_before & {c for c in calls[len(before) :]}, calls
    assert sorted(set(calls)) == ["first", "second", "third"] and all(calls.count(n) == 1 for n in finished_before)
    assert [e.event for e in replayed][-1] == "run_finished"
    assert [json.loads(e.data)["node"] for e in replayed if e.event == "step_finished"] == [
        s["node"] for s in trace[len(before) :]
    ]


def test_200_concurrent_requests_no_errors_no_lost_runs(server: Server) -> None:
    async def hammer() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
        async with httpx.AsyncClient(base_url=server.url, timeout=120, limits=limits) as client:
            requests = [
                client.post("/flows/reply/runs", json={"inputs": {"question": f"question {n}"}}) for n in range(150)
            ]
            requests += [
                client.post("/flows/reply/runs", json={"inputs": {"question": f"later {n}"}, "mode": "background"})
                for n in range(50)
            ]
            return await asyncio.gather(*requests)

    answers = asyncio.run(hammer())
    assert [a.status_code for a in answers] == [200] * 150 + [202] * 50
    run_ids = [a.json()["run_id"] for a in answers]
    assert len(set(run_ids)) == 200
    assert all(a.json()["status"] == "succeeded" for a in answers[:150])
    with server.client() as client:
        for run_id in run_ids[150:]:
            wait_for(lambda run_id=run_id: client.get(f"/runs/{run_id}").json()["status"] == "succeeded")
    db = Path(server.command[server.command.index("--db") + 1])
    stored = {r["run_id"]: r["status"] for r in cli("runs", "--limit", "1000", db=db)}
    assert all(stored.get(run_id) == "succeeded" for run_id in run_ids)


def test_an_exported_package_serves_its_flow(tmp_path: Path, flows_dir: Path) -> None:
    done = export_flow(flows_dir / "reply.yaml", tmp_path / "package", name="reply_pkg")
    env = {"PYTHONPATH": str(done.out)}
    command = [sys.executable, "-m", "reply_pkg", "serve", "--port", "0", "--db", str(tmp_path / "runs.db")]
    package = Server(command, env=env, cwd=tmp_path).start()
    try:
        with package.client() as client:
            assert [f["name"] for f in client.get("/flows").json()] == ["reply"]
            run = client.post("/flows/reply/runs", json={"inputs": {"question": "packaged?"}}).json()
            assert run["status"] == "succeeded" and run["outputs"] == {"answer": "Paris is the capital of France."}
            assert client.post("/flows/reply/runs", json={"inputs": {}}).status_code == 422
            body = {"inputs": {"question": "streamed"}, "mode": "stream"}
            assert events_of(client, "POST", "/flows/reply/runs", json=body)[-1].event == "run_finished"
    finally:
        package.stop()


def test_events_follow_a_run_the_cli_drives_in_the_same_store(server: Server, tmp_path: Path) -> None:
    script = tmp_path / "slow.yaml"
    script.write_text("script:\n  - {reply: 'slowly', delay_s: 1.0}\n")
    db = Path(server.command[server.command.index("--db") + 1])
    flow = Path(server.command[2]) / "steps.yaml"
    command = [
        FLOWSTUDIO,
        "run",
        str(flow),
        "-i",
        "topic=cli",
        "--model",
        f"default=scripted/{script}",
        "--db",
        str(db),
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:

        def newest_running() -> str | None:
            with sqlite3.connect(db) as conn:
                row = conn.execute("SELECT run_id FROM runs WHERE status = 'running' AND flow = 'steps'").fetchone()
            return row[0] if row else None

        run_id = wait_for(newest_running, timeout=60)
        with server.client() as client:
            events = events_of(client, "GET", f"/runs/{run_id}/events")
    finally:
        process.wait(timeout=60)
    assert [e.event for e in events if e.event != "step_started"] == ["run_started"] + ["step_finished"] * 3 + [
        "run_finished"
    ]
    assert json.loads(events[-1].data)["outputs"] == {"final": "slowly", "count": 2}


def test_a_stopped_server_leaves_its_background_runs_to_the_next_start(tmp_path: Path, flows_dir: Path) -> None:
    db = tmp_path / "runs.db"
    first = Server(serve_command(flows_dir, db)).start()
    try:
        with first.client() as client:
            body = {"inputs": {"topic": "graceful"}, "mode": "background"}
            run_id = client.post("/flows/steps/runs", json=body).json()["run_id"]
            wait_for(lambda: client.get(f"/runs/{run_id}/trace").json())
    finally:
        first.stop()
    assert first.process is not None and first.process.returncode == -15  # uvicorn re-raises SIGTERM once stopped
    assert cli("runs", db=db)[0]["status"] == "interrupted"  # left for the next start: its process is gone
    second = Server(serve_command(flows_dir, db)).start()
    try:
        with second.client() as client:
            wait_for(lambda: client.get(f"/runs/{run_id}").json()["status"] == "succeeded")
            trace = client.get(f"/runs/{run_id}/trace").json()
    finally:
        second.stop()
    assert [s["node"] for s in trace] == ["first", "second", "third"]


def test_a_background_run_is_answered_once_its_row_is_committed(tmp_path: Path, flows_dir: Path) -> None:
    """The run's row is queued as it starts; the 202 that gives the client its id waits for the
    commit, so the id is always found. Holding the writers' turn (the lock file) holds the commit."""
    db = tmp_path / "runs.db"
    running = Server(serve_command(flows_dir, db)).start()
    try:
        with running.client() as client, open(f"{db}-writer.lock", "a+") as turns:
            fcntl.flock(turns, fcntl.LOCK_EX)
            with ThreadPoolExecutor(1) as pool:
                body = {"inputs": {"topic": "held"}, "mode": "background"}
                answer = pool.submit(client.post, "/flows/steps/runs", json=body)
                time.sleep(1.0)
                assert not answer.done()  # the run started (its first step is under way), the row is not committed
                fcntl.flock(turns, fcntl.LOCK_UN)
                started = answer.result(timeout=30)
            assert started.status_code == 202, started.text
            assert client.get(f"/runs/{started.json()['run_id']}").status_code == 200
    finally:
        running.stop()


def test_a_wait_run_records_event_ids_only_once_someone_follows_it(tmp_path: Path, flows_dir: Path) -> None:
    """A `wait` run sends its events to no one and records no event id; a follower arriving
    mid-run gets the running step's `step_started`, and every later replay gives the same ids."""
    db = tmp_path / "runs.db"
    running = Server(serve_command(flows_dir, db)).start()
    try:
        with running.client() as client, ThreadPoolExecutor(1) as pool:
            alone = client.post("/flows/steps/runs", json={"inputs": {"topic": "alone"}})
            assert alone.status_code == 200
            assert sqlite3.connect(db).execute("SELECT count(*) FROM serve_events").fetchone() == (0,)
            waited = pool.submit(client.post, "/flows/steps/runs", json={"inputs": {"topic": "watched"}})
            run_id = _running_run(db)
            time.sleep(0.7)  # the first step has finished, the second is under way
            live = events_of(client, "GET", f"/runs/{run_id}/events")
            assert waited.result(timeout=30).json()["status"] == "succeeded"
            assert [e.event for e in live].count("step_started") == 3 and live[-1].event == "run_finished"
            replayed = events_of(client, "GET", f"/runs/{run_id}/events")
            assert [(e.id, e.event) for e in replayed] == [(e.id, e.event) for e in live]
            once = events_of(client, "GET", f"/runs/{alone.json()['run_id']}/events")
            assert [e.id for e in once if e.event == "step_started"] == ["1", "3", "5"]
    finally:
        running.stop()


def _running_run(db: Path) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with sqlite3.connect(db) as conn:
            row = conn.execute("SELECT run_id FROM runs WHERE status = 'running'").fetchone()
        if row:
            return str(row[0])
        time.sleep(0.02)
    raise AssertionError("no run started")
