"""Over HTTP, an event keeps its id: what a stream sent live, `GET /runs/{id}/events` replays with
the same ids, a cancelled run's `run_finished` included, and `Last-Event-ID` resumes right after."""

from __future__ import annotations

import json
import threading

from httpx_sse import ServerSentEvent, connect_sse

from tests.serve.conftest import Server


def test_a_cancelled_streamed_run_replays_with_the_ids_it_had_live(server: Server) -> None:
    live: list[ServerSentEvent] = []
    second_done = threading.Event()

    def stream() -> None:
        with (
            server.client() as client,
            connect_sse(
                client, "POST", "/flows/steps/runs", json={"inputs": {"topic": "ids"}, "mode": "stream"}
            ) as source,
        ):
            for event in source.iter_sse():
                live.append(event)
                if event.event == "step_started" and json.loads(event.data)["node"] == "third":
                    second_done.set()

    reader = threading.Thread(target=stream)
    reader.start()
    assert second_done.wait(30), [e.event for e in live]
    run_id = json.loads(live[0].data)["run_id"]
    with server.client() as client:
        assert client.post(f"/runs/{run_id}/cancel").json()["status"] == "cancelled"
        reader.join(30)
        seen = [(e.id, e.event) for e in live if e.event != "token"]
        assert seen[-2:] == [("4.1", "step_started"), ("4.2", "run_finished")]
        with connect_sse(client, "GET", f"/runs/{run_id}/events") as source:
            replayed = [(e.id, e.event, e.data) for e in source.iter_sse()]
        assert replayed == [(e.id, e.event, e.data) for e in live if e.event != "token"]
        started = next(e.id for e in live if e.event == "step_started" and json.loads(e.data)["node"] == "second")
        with connect_sse(client, "GET", f"/runs/{run_id}/events", headers={"Last-Event-ID": started}) as source:
            after = [(e.id, e.event) for e in source.iter_sse()]
        assert after == seen[seen.index((started, "step_started")) + 1 :]
