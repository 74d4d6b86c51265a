"""Reviews end to end: served runs of the demo flow, reviews through the API and the CLI, the
dataset exported, a batch on it scoring the flow."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import CLI, FLOWS, SCRIPTS
from tests.serve.conftest import Server, serve_command

SCRIPTED = f"scripted/{SCRIPTS / 'triage.yaml'}"  # answers `billing` to every ticket
SERVED_MODEL = "scripted/scripts/triage.yaml"  # the same script, in the served flows' folder


def test_served_runs_reviewed_through_the_api_make_a_dataset_a_batch_scores(cli: CLI, tmp_path: Path) -> None:
    served = tmp_path / "flows"
    served.mkdir()
    shutil.copy(FLOWS / "ticket-triage.yaml", served)
    (served / "scripts").mkdir()
    shutil.copy(SCRIPTS / "triage.yaml", served / "scripts")
    db = tmp_path / "flowstudio.db"
    server = Server(serve_command(served, db, "--allow-model", SERVED_MODEL)).start()
    try:
        with server.client() as client:
            run_ids = []
            for n in range(40):
                body = {"inputs": {"ticket": f"ticket {n}: the app crashes"}, "models": {"default": SERVED_MODEL}}
                answer = client.post("/flows/ticket-triage/runs", json=body)
                assert answer.status_code == 200, answer.text
                run_ids.append(answer.json()["run_id"] if "run_id" in answer.json() else answer.json()["id"])
            for n, run_id in enumerate(run_ids[:30]):
                review = {"key": "verdict", "value": "good", "author": "ann"}
                if n < 10:  # the model said billing; the reviewer says bug, and why
                    review = {"value": "bad", "correction": {"category": "bug"}, "comment": "a crash is a bug"}
                assert client.post(f"/runs/{run_id}/feedback", json=review).status_code == 200
            stored = client.get(f"/runs/{run_ids[0]}/feedback").json()
            assert [(f["score"], f["correction"], f["comment"]) for f in stored] == [
                (0.0, {"category": "bug"}, "a crash is a bug")
            ]
            wrong = client.post(f"/runs/{run_ids[0]}/feedback", json={"correction": {"label": "bug"}})
            assert wrong.status_code == 422 and wrong.json()["detail"][0]["loc"] == ["body", "correction", "label"]
            assert client.post("/runs/nope/feedback", json={"value": "good"}).status_code == 404
            huge = client.post(f"/runs/{run_ids[0]}/feedback", json={"comment": "x" * 3_000_000})
            assert huge.status_code == 413
    finally:
        server.stop()
    env = {"FLOWSTUDIO_DB": str(db)}
    out = tmp_path / "reviewed.jsonl"
    exported = cli("dataset", "from-reviews", "ticket-triage", "--out", str(out), "--json", env=env)
    assert exported.code == 0, exported.err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 30 and {row["run_id"] for row in rows} == set(run_ids[:30])
    assert sum(row["category"] == "bug" for row in rows) == 10
    unreviewed = cli("runs", "--unreviewed", "--json", env=env).json()
    assert {run["run_id"] for run in unreviewed} == set(run_ids[30:])
    scored = cli(
        "batch", str(FLOWS / "ticket-triage.yaml"), "--data", str(out), "--expect", "category=category",
        "--model", f"default={SCRIPTED}", "--json", env=env,
    )  # fmt: skip
    assert scored.code == 0, scored.err
    summary = scored.json()
    assert summary["examples"] == 30 and summary["succeeded"] == 30
    # category and reply both scored: the 10 corrected rows get the reply right, the category wrong
    assert abs(summary["score"] - 25 / 30) < 1e-5, summary
    flow = tmp_path / "ticket-triage.yaml"
    shutil.copy(FLOWS / "ticket-triage.yaml", flow)
    searched = cli(
        "optimize", str(flow), "--train", str(out), "--dev", str(out), "--budget-calls", "60", "--metric", "exact",
        "--model", f"default={SCRIPTED}", "--out", str(tmp_path / "tuned.yaml"), "--json", env=env, timeout=300,
    )  # fmt: skip
    assert searched.code == 0, searched.err
    report = searched.json()
    used = report["reviewed_examples"]  # one file for both: the optimizer splits it
    assert used["train"] + used["dev"] == 30 and used["dev"] > 0
    assert 0 < report["calls"] <= 60  # the budget is spent, not crossed


def test_review_from_the_cli_by_run_id_prefix(cli: CLI, tmp_path: Path) -> None:
    ran = cli("run", str(FLOWS / "ticket-triage.yaml"), "-i", "ticket=refund me", "--model", f"default={SCRIPTED}",
              "--json")  # fmt: skip
    run_id = ran.json()["run_id"]
    bad = cli("review", run_id[:6], "--verdict", "bad", "--expect", "label=bug")
    assert bad.code == 2 and "--expect label" in bad.err and "no output 'label'" in bad.err
    done = cli("review", run_id[:6], "--verdict", "bad", "--expect", "category=bug", "--comment", "crash",
               "--node", "classify", "--json", env={"USER": "ann"})  # fmt: skip
    assert done.code == 0, done.err
    record = done.json()
    assert (record["run_id"], record["score"], record["correction"], record["author"], record["node"]) == (
        run_id, 0.0, {"category": "bug"}, "ann", "classify",
    )  # fmt: skip
    assert [run["run_id"] for run in cli("runs", "--reviewed", "--json").json()] == [run_id]
    scored = cli("review", run_id, "--score", "0")
    assert scored.code == 0 and scored.out.strip() == f"reviewed {run_id}: 0.0"
