"""Batch evaluation: scores, failures, concurrency, resume, the CLI contract (real SQLite, real subprocesses)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from studio.errors import InputError
from studio.evaluate.batch import BatchOptions, batch, confidence_interval, percentile, prepare_batch
from studio.evaluate.summary import cache_text
from studio.store import SQLiteStore
from tests.conftest import CLI, FIXTURES, FLOWSTUDIO, ROOT

QA = str(FIXTURES / "qa.yaml")
DATA = ROOT / "tests" / "data"
SUMMARY_KEYS = {
    "experiment_id", "flow", "status", "metric", "examples", "succeeded", "failed", "metric_errors", "errors",
    "score", "score_ci", "cost_usd", "cost_per_example", "tokens", "latency_p50_s", "latency_p95_s", "ran",
    "resumed", "seconds", "examples_per_s", "out", "calls", "cache_hits", "errors_by_kind", "failed_lines",
}  # fmt: skip
SLOW = """flowstudio: 1
name: slow
inputs: {question: {type: str}}
outputs: {answer: $answer.text}
models:
  default: {model: scripted, script: [{reply: "ok", delay_s: DELAY}]}
nodes:
  answer: {type: llm.generate, inputs: {question: $inputs.question}, config: {prompt: "{{ question }}"}}
"""


@pytest.fixture
def store(tmp_path: Path) -> Any:
    made = SQLiteStore(tmp_path / "batch.db")
    yield made
    made.close()


def _slow(tmp_path: Path, rows: int, delay: float = 0.1) -> tuple[str, str]:
    flow = tmp_path / "slow.yaml"
    flow.write_text(SLOW.replace("DELAY", str(delay)))
    data = tmp_path / "slow.jsonl"
    data.write_text("".join(json.dumps({"question": f"q{i}", "answer": "ok"}) + "\n" for i in range(rows)))
    return str(flow), str(data)


async def test_scores_failures_and_one_experiment(store: SQLiteStore) -> None:
    seen: list[tuple[int, int]] = []

    def progress(*, done: int, total: int, **_: Any) -> None:
        seen.append((done, total))

    result = await batch(BatchOptions(flow=QA, data=str(DATA / "qa.jsonl"), concurrency=2), store, progress=progress)
    summary = result.summary
    assert (summary["metric"], summary["examples"], summary["failed"], summary["errors"]) == ("exact", 4, 1, 1)
    assert summary["score"] == 0.5 and 0 < summary["score_ci"][0] < 0.5 < summary["score_ci"][1] < 1
    assert [r.score for r in result.results] == [1.0, 1.0, 0.0, 0.0]
    crashed = result.results[2]
    assert crashed.outcome.status == "failed" and "auth" in (crashed.outcome.error or "")
    assert summary["errors_by_kind"] == {"auth": 1} and summary["failed_lines"] == [crashed.line]
    assert summary["tokens"] > 0 and summary["cost_usd"] > 0
    assert summary["cost_per_example"] == pytest.approx(summary["cost_usd"] / 4)
    assert seen[0] == (0, 4) and seen[-1] == (4, 4) and len(seen) == 5
    runs = store.runs_of_experiment(result.experiment_id)
    assert sorted(r.status for r in runs) == ["failed", "succeeded", "succeeded", "succeeded"]
    assert {r.run_id for r in runs} == {r.outcome.run_id for r in result.results}
    stored = store.get_experiment(result.experiment_id)
    assert stored is not None and stored.kind == "batch" and stored.summary is not None
    assert stored.summary == {**summary, "scores": {r.outcome.run_id: r.score for r in result.results}}
    assert stored.config["expected"] == {"answer": "answer"} and stored.config["examples"] == 4


async def test_concurrency_bounds_examples_in_flight(tmp_path: Path, store: SQLiteStore) -> None:
    flow, data = _slow(tmp_path, 6)
    for concurrency in (1, 3):
        result = await batch(BatchOptions(flow=flow, data=data, concurrency=concurrency, cache=False), store)
        runs = store.runs_of_experiment(result.experiment_id)
        events = sorted([(r.started_at, 1) for r in runs] + [(r.ended_at or "", -1) for r in runs])
        in_flight = peak = 0
        for _, change in events:
            in_flight += change
            peak = max(peak, in_flight)
        assert peak == concurrency


async def test_metric_that_raises_scores_zero_and_names_the_row(
    tmp_path: Path, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "picky.py").write_text(
        "def score(example, outputs):\n"
        "    if example['question'].startswith('Who'):\n"
        "        raise ValueError('cannot judge this one')\n"
        "    return 1.0\n"
    )
    monkeypatch.chdir(tmp_path)
    options = BatchOptions(flow=QA, data=str(DATA / "qa.jsonl"), metric="picky:score")
    result = await batch(options, store)
    assert [r.score for r in result.results] == [1.0, 1.0, 0.0, 0.0]
    assert result.results[3].metric_error == "row 5: metric 'picky:score' raised ValueError: cannot judge this one"
    assert (result.summary["metric_errors"], result.summary["errors"]) == (1, 2)


async def test_without_expected_columns_there_is_no_score(tmp_path: Path, store: SQLiteStore) -> None:
    data = tmp_path / "questions.jsonl"
    data.write_text('{"question": "What is 2 + 2?"}\n')
    result = await batch(BatchOptions(flow=QA, data=str(data)), store)
    assert result.summary["score"] is None and result.summary["metric"] is None and result.summary["succeeded"] == 1


async def test_resume_runs_only_what_did_not_finish(tmp_path: Path, store: SQLiteStore) -> None:
    flow, data = _slow(tmp_path, 6, delay=0.02)

    class Stop(Exception):
        pass

    def stop_after_two(*, done: int, **_: Any) -> None:
        if done == 2:
            raise Stop

    options = BatchOptions(flow=flow, data=data, concurrency=1, cache=False)
    with pytest.raises(Stop):
        await batch(options, store, progress=stop_after_two)
    (experiment,) = store.list_experiments()
    assert experiment.summary is None
    result = await batch(None, store, resume=experiment.experiment_id)
    assert (result.summary["resumed"], result.summary["ran"], result.summary["score"]) == (2, 4, 1.0)
    runs = store.runs_of_experiment(experiment.experiment_id)
    finished = [r for r in runs if r.status == "succeeded"]
    assert sorted(r.inputs["question"] for r in finished) == [f"q{i}" for i in range(6)]
    assert len(runs) - len(finished) <= 1  # a run cut off mid-way stays `running`; its example ran again


def test_confidence_interval_and_percentile() -> None:
    low, high = confidence_interval([1.0] * 8 + [0.0] * 2)
    assert 0.49 < low < 0.8 < high < 0.97  # Wilson: asymmetric, inside [0, 1]
    assert confidence_interval([1.0, 1.0])[1] == 1.0
    low, high = confidence_interval([0.5, 0.7, 0.6])
    assert low < 0.6 < high
    assert confidence_interval([]) == (0.0, 0.0)
    assert percentile([0.3, 0.1, 0.2, 0.4], 50) == 0.2 and percentile(range(1, 101), 95) == 95
    assert percentile([], 50) == 0.0


# The command line


def test_batch_json_out_and_experiments(cli: CLI, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    result = cli("batch", QA, "--data", str(DATA / "qa.csv"), "--map", "question=q", "--expect", "answer=gold",
                 "--out", str(out), "--json")  # fmt: skip
    assert result.code == 0, result.err
    summary = result.json()
    assert set(summary) == SUMMARY_KEYS
    assert (summary["score"], summary["examples"], summary["errors"]) == (pytest.approx(2 / 3), 3, 0)
    experiment_id = summary["experiment_id"]
    assert f"flowstudio batch --resume {experiment_id}" in result.err
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["line"], r["score"], r["status"]) for r in lines] == [(2, 1.0, "succeeded"), (3, 1.0, "succeeded"), (4, 0.0, "succeeded")]  # fmt: skip
    assert lines[1]["outputs"] == {"answer": "Paris."} and lines[1]["expected"] == {"answer": "Paris"}

    (listed,) = cli("experiments", "--json").json()
    assert listed["experiment_id"] == experiment_id and listed["status"] == "finished"
    assert listed["score"] == pytest.approx(2 / 3) and listed["examples"] == 3
    shown = cli("experiments", experiment_id, "--json").json()
    assert shown["runs"] == 3 and shown["summary"]["score"] == summary["score"]
    assert shown["config"]["inputs"] == {"question": "q"}
    steps = cli("trace", lines[0]["run_id"], "--json").json()
    assert [s["node"] for s in steps] == ["ask", "answer", "clean"]

    table = cli("batch", QA, "--data", str(DATA / "qa.jsonl"))
    assert table.code == 0, table.err
    assert "score (exact)" in table.out and "0.500" in table.out and "95% CI" in table.out
    assert "row 4: node 'answer' failed" in table.out
    assert "failed by kind" in table.out and "auth 1" in table.out


def test_retry_errors_runs_only_the_failed_examples_again(cli: CLI) -> None:
    first = cli("batch", QA, "--data", str(DATA / "qa.jsonl"), "--json").json()
    assert (first["failed"], first["errors_by_kind"], first["failed_lines"]) == (1, {"auth": 1}, [4])
    again = cli("batch", "--resume", first["experiment_id"], "--retry-errors", "--json")
    summary = again.json()
    assert (summary["ran"], summary["resumed"], summary["examples"]) == (1, 3, 4)  # the others not paid twice
    assert summary["errors_by_kind"] == {"auth": 1}  # an auth error fails again, and says so
    (listed,) = cli("experiments", "--json").json()
    assert cli("experiments", listed["experiment_id"], "--json").json()["runs"] == 5
    refused = cli("batch", QA, "--data", str(DATA / "qa.jsonl"), "--retry-errors")
    assert refused.code == 2 and "--retry-errors" in refused.err and "--resume" in refused.err


async def test_second_batch_is_served_from_the_cache(
    tmp_path: Path, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = tmp_path / "calls.jsonl"
    monkeypatch.setenv("FLOWSTUDIO_SCRIPTED_LEDGER", str(ledger))
    options = BatchOptions(flow=QA, data=str(DATA / "qa.jsonl"), limit=2)
    first = await batch(options, store)
    assert len(ledger.read_text().splitlines()) == 2
    second = await batch(options, store)
    assert len(ledger.read_text().splitlines()) == 2  # model calls: 0
    assert second.summary["score"] == first.summary["score"] == 1.0 and second.summary["tokens"] == 0
    assert (first.summary["calls"], first.summary["cache_hits"]) == (2, 0)
    assert (second.summary["calls"], second.summary["cache_hits"]) == (2, 2), "why tokens read 0, counted"
    assert cache_text(second.summary) == "2 of 2 model calls from the LLM cache" and cache_text(first.summary) is None
    await batch(BatchOptions(flow=QA, data=str(DATA / "qa.jsonl"), limit=2, cache=False), store)
    assert len(ledger.read_text().splitlines()) == 4


def test_bad_data_exits_2_naming_the_row(cli: CLI, tmp_path: Path) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_text('{"question": "a", "answer": "b"}\n{"question": "c", "answer": }\n')
    result = cli("batch", QA, "--data", str(data))
    assert result.code == 2 and result.out == ""
    assert result.err.startswith(f"error: {data}:2: row is not valid JSON") and "Traceback" not in result.err
    assert cli("experiments", "--json").json() == []  # nothing ran, nothing recorded


def test_bad_options_exit_2(cli: CLI, store: SQLiteStore) -> None:
    result = cli("batch", QA, "--data", str(DATA / "qa.jsonl"), "--metric", "accuracy")
    assert result.code == 2 and "unknown metric 'accuracy'" in result.err
    with pytest.raises(InputError, match="a flow and --data, or --resume"):
        prepare_batch(None, store)
    with pytest.raises(InputError, match="no batch experiment 'nope'"):
        prepare_batch(None, store, resume="nope")


async def test_resume_refuses_an_edited_flow_or_other_options(tmp_path: Path, store: SQLiteStore) -> None:
    flow = tmp_path / "qa.yaml"
    shutil.copy(QA, flow)
    first = await batch(BatchOptions(flow=str(flow), data=str(DATA / "qa.jsonl")), store)
    with pytest.raises(InputError, match=r"ran .*qa\.yaml, not"):
        prepare_batch(BatchOptions(flow=QA, data=str(DATA / "qa.jsonl")), store, resume=first.experiment_id)
    with pytest.raises(InputError, match="metric = None"):
        prepare_batch(BatchOptions(flow="", data="", metric="f1"), store, resume=first.experiment_id)
    flow.write_text(flow.read_text().replace("Answer briefly.", "Answer."))
    with pytest.raises(InputError, match="the flow changed since the experiment started"):
        prepare_batch(None, store, resume=first.experiment_id)


def test_a_killed_batch_resumes_where_it_stopped(cli: CLI, tmp_path: Path) -> None:
    flow, data = _slow(tmp_path, 30, delay=0.05)
    ledger = tmp_path / "calls.jsonl"
    db = tmp_path / "flowstudio.db"
    env = {"FLOWSTUDIO_DB": str(db), "FLOWSTUDIO_SCRIPTED_LEDGER": str(ledger)}
    process = subprocess.Popen(
        [FLOWSTUDIO, "batch", flow, "--data", data, "--concurrency", "2", "--json"],
        cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not ledger.exists() or len(ledger.read_text().splitlines()) < 8):
        time.sleep(0.02)
    process.kill()
    process.communicate()
    store = SQLiteStore(db)
    (experiment,) = store.list_experiments()
    store.close()
    assert experiment.summary is None
    result = cli("batch", "--resume", experiment.experiment_id, "--json", env=env)
    assert result.code == 0, result.err
    summary = result.json()
    assert summary["examples"] == 30 and summary["score"] == 1.0 and summary["errors"] == 0
    assert summary["resumed"] >= 6 and summary["resumed"] + summary["ran"] == 30
    calls = len(ledger.read_text().splitlines())
    assert 30 <= calls <= 30 + 2  # at most the two examples in flight at the kill ran twice
