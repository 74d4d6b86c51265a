"""`flowstudio db migrate --from sqlite:PATH --to postgresql://...`: everything copied, the counts checked."""

from __future__ import annotations

from pathlib import Path

from studio.store import SQLiteStore
from studio.store.base import CallRecord, ExperimentRecord, RunRecord, StepRecord
from studio.store.feedback import FeedbackRecord
from studio.store.postgres import PostgresStore
from tests.conftest import CLI


def _fill(path: Path) -> None:
    store = SQLiteStore(path)
    store.create_experiment(ExperimentRecord("e1", "batch", "f", config={"n": 2}, summary={"score": 0.5}))
    for n in range(3):
        run = RunRecord(f"r{n}", "f", None, "h", {"q": n}, experiment_id="e1", started_at=f"2026-01-0{n + 1}T00:00:00")
        store.create_run(run, "flowstudio: 1\n")
        call = CallRecord(node="a", model="scripted", request={"prompt": str(n)}, response="yo", attempt=2, wait_s=0.5)
        store.finish_step(run.run_id, StepRecord("a", "succeeded", outputs={"t": n}, tokens=3), [call, call])
        store.finish_step(run.run_id, StepRecord("b", "skipped"), [])
        store.finish_run(run.run_id, status="succeeded", outputs={"x": n}, error=None)
    store.cache_put("k1", "scripted", {"text": "one"})
    store.add_feedback(FeedbackRecord("r1", score=0.0, correction={"x": 5}, comment="five"))
    store.close()


def test_migrate_copies_everything_and_prints_the_counts(cli: CLI, tmp_path: Path, postgres_url: str) -> None:
    _fill(tmp_path / "old.db")
    result = cli("db", "migrate", "--from", f"sqlite:{tmp_path / 'old.db'}", "--to", postgres_url, "--json")
    assert result.code == 0, result.err
    assert {c["table"]: (c["source"], c["target"]) for c in result.json()} == {
        "runs": (3, 3), "steps": (6, 6), "llm_calls": (6, 6), "cache": (1, 1), "experiments": (1, 1),
        "versions": (0, 0), "feedback": (1, 1),
    }  # fmt: skip
    copied = PostgresStore(postgres_url)
    run = copied.get_run("r1")
    assert run is not None and (run.status, run.outputs, run.tokens, run.steps) == ("succeeded", {"x": 1}, 3, 2)
    assert copied.flow_text("r1") == "flowstudio: 1\n"
    assert [s.node for s in copied.steps("r1")] == ["a", "b"]
    assert [(c.request, c.attempt, c.wait_s) for c in copied.calls("r1")] == [({"prompt": "1"}, 2, 0.5)] * 2
    assert copied.cache_get("k1") == {"text": "one"}
    assert [(f.correction, f.comment) for f in copied.feedback("r1")] == [({"x": 5}, "five")]
    experiment = copied.get_experiment("e1")
    assert experiment is not None and experiment.summary == {"score": 0.5}
    assert [r.run_id for r in copied.runs_of_experiment("e1")] == ["r0", "r1", "r2"]
    copied.close()
    again = cli("db", "migrate", "--from", f"sqlite:{tmp_path / 'old.db'}", "--to", postgres_url)
    assert again.code == 0 and "runs" in again.out and "MISSING" not in again.out  # nothing copied twice


def test_a_target_lacking_rows_exits_1(cli: CLI, tmp_path: Path, postgres_url: str) -> None:
    _fill(tmp_path / "old.db")
    target = PostgresStore(postgres_url)
    target.create_run(RunRecord("r0", "f", None, "h", {}))  # the same id without its steps: skipped, so short
    target.close()
    result = cli("db", "migrate", "--from", f"sqlite:{tmp_path / 'old.db'}", "--to", postgres_url)
    assert result.code == 1
    assert "steps" in result.out and "MISSING" in result.out and "lacks rows" in result.err


def test_bad_locations_are_bad_input(cli: CLI, tmp_path: Path, postgres_url: str) -> None:
    missing = cli("db", "migrate", "--from", f"sqlite:{tmp_path / 'none.db'}", "--to", postgres_url)
    assert missing.code == 2 and "no SQLite store at" in missing.err
    _fill(tmp_path / "old.db")
    not_pg = cli("db", "migrate", "--from", f"sqlite:{tmp_path / 'old.db'}", "--to", str(tmp_path / "x.db"))
    assert not_pg.code == 2 and "is not a postgresql:// URL" in not_pg.err
