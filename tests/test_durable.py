"""Durable runs: resume, rerun, human input, cache, faults, budgets, secrets (real processes, real SQLite)."""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from bench import crash_drill
from studio.models.scripted import LEDGER_ENV
from tests.conftest import CLI, FIXTURES, FLOWSTUDIO, ROOT

DRILL_GOLDEN = crash_drill.GOLDEN
ledger_counts = crash_drill.ledger_counts


def steps_of(cli: CLI, run_id: str) -> list[dict[str, object]]:
    result: list[dict[str, object]] = cli("trace", run_id, "--json").json()
    return result


def test_crash_drill_resume_equals_golden_run(tmp_path: Path) -> None:
    """SIGKILL a run at 6 random points; resume; nothing lost, finished nodes never run twice
    (`bench/crash_drill.py --trials 200` is the full drill; docs/benchmarks.md has its figures)."""
    rng = random.Random(7)
    for number in range(6):
        result = crash_drill.trial(tmp_path, number, rng)
        assert result["killed_before_start"] is False
        assert result["lost_steps"] == 0, result
        assert result["reexecuted_finished"] == 0, result
        assert result["interrupted_extra_calls"] <= 2, result  # e runs beside b-d: two may be in flight
        assert result["outputs_equal_golden"] and result["integrity_ok"], result


def test_fan_out_with_one_failing_branch_resumes_only_that_branch(cli: CLI, tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("script:\n  - {match: '^node e', error: {kind: auth}}\n  - {reply: ok}\n")
    flow = tmp_path / "fan.yaml"
    flow.write_text((FIXTURES / "drill.yaml").read_text().replace("scripted/drill-script.yaml", f"scripted/{script}"))
    ledger = tmp_path / "ledger.jsonl"
    env = {LEDGER_ENV: str(ledger)}
    failed = cli("run", str(flow), "-i", "topic=x", "--json", env=env)
    assert failed.code == 1 and "node 'e' failed" in failed.json()["error"]
    first = ledger_counts(ledger)
    run_id = failed.json()["run_id"]
    finished = {s["node"] for s in steps_of(cli, run_id) if s["status"] == "succeeded"}
    assert {"a", "b", "c"} <= finished and "e" not in finished
    script.write_text("script:\n  - {reply: ok}\n")
    resumed = cli("resume", run_id, "--json", env=env)
    assert resumed.code == 0, resumed.err
    again = ledger_counts(ledger) - first
    assert not set(again) & finished
    assert set(again) == set("abcdefghij") - finished and again["e"] == 1


def test_resume_refuses_an_edited_flow_and_a_finished_run(cli: CLI, tmp_path: Path) -> None:
    flow = tmp_path / "approval.yaml"
    flow.write_text((FIXTURES / "approval.yaml").read_text())
    waiting = cli("run", str(flow), "-i", "topic=tea", "--json")
    run_id = waiting.json()["run_id"]
    flow.write_text(flow.read_text().replace("A short draft.", "Another draft."))
    refused = cli("resume", run_id, "--value", "approve=true")
    assert refused.code == 2 and "changed since this run started" in refused.err
    flow.write_text((FIXTURES / "approval.yaml").read_text())
    assert cli("resume", run_id, "--value", "approve=true").code == 0
    finished = cli("resume", run_id)
    assert finished.code == 2 and "already succeeded" in finished.err


def test_human_input_waits_then_resumes_with_a_typed_value(cli: CLI) -> None:
    waiting = cli("run", str(FIXTURES / "approval.yaml"), "-i", "topic=tea", "--json")
    assert waiting.code == 3
    body = waiting.json()
    assert body["status"] == "waiting" and "approve" in body["error"]
    run_id = body["run_id"]
    approve = next(s for s in steps_of(cli, run_id) if s["node"] == "approve")
    assert approve["status"] == "waiting" and approve["error"] == "Publish this? A short draft."
    wrong = cli("resume", run_id, "--value", "approve=maybe")
    assert wrong.code == 2 and "must be bool" in wrong.err
    unknown = cli("resume", run_id, "--value", "draft=true")
    assert unknown.code == 2 and "not waiting for input" in unknown.err
    done = cli("resume", run_id, "--value", "approve=true", "--json")
    assert done.code == 0, done.err
    assert done.json()["outputs"] == {"published": "PUBLISHED: A short draft."}
    assert [s["node"] for s in steps_of(cli, run_id)].count("draft") == 1


def test_rerun_from_a_node_reuses_upstream(cli: CLI, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    env = {LEDGER_ENV: str(ledger)}
    first = cli("run", str(FIXTURES / "drill.yaml"), "-i", "topic=x", "--no-cache", "--json", env=env).json()
    before = ledger_counts(ledger)
    again = cli("rerun", first["run_id"], "--from", "g", "--json", env=env)
    assert again.code == 0, again.err
    body = again.json()
    assert body["outputs"] == DRILL_GOLDEN and body["run_id"] != first["run_id"]
    assert set(ledger_counts(ledger) - before) == {"g", "h", "i", "j"}
    steps = {s["node"]: s for s in steps_of(cli, body["run_id"])}
    assert all(steps[n]["reused"] for n in "abcdef") and not any(steps[n]["reused"] for n in "ghij")
    assert cli("rerun", first["run_id"], "--from", "zz").code == 2


def test_second_identical_run_is_served_from_the_cache(cli: CLI, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    env = {LEDGER_ENV: str(ledger)}
    args = ("run", str(FIXTURES / "chain.yaml"), "-i", "topic=rain", "--json")
    first = cli(*args, env=env).json()
    second = cli(*args, env=env).json()
    assert len(ledger.read_text().splitlines()) == 1
    assert second["outputs"] == first["outputs"] and second["cost_usd"] == 0 and first["cost_usd"] > 0
    write = next(s for s in steps_of(cli, second["run_id"]) if s["node"] == "write")
    assert write["cached"] is True
    cli(*args, "--no-cache", env=env)
    assert len(ledger.read_text().splitlines()) == 2


@pytest.mark.parametrize(
    ("rule", "calls", "status"),
    [
        ("{error: {kind: rate_limit, times: 2, retry_after_s: 0.2}}", 3, "succeeded"),
        ("{error: {kind: server, times: 2}}", 3, "succeeded"),
        ("{error: {kind: timeout, times: 1}}", 2, "succeeded"),
        ("{error: {kind: bad_json, times: 1}}", 2, "succeeded"),
        ("{error: {kind: server, times: 5}}", 3, "failed"),
        ("{error: {kind: auth}}", 1, "failed"),
    ],
)
def test_fault_kinds(cli: CLI, tmp_path: Path, rule: str, calls: int, status: str) -> None:
    flow = tmp_path / "fault.yaml"
    flow.write_text(
        "flowstudio: 1\nname: fault\noutputs: {x: $a.text}\n"
        f"models:\n  default: {{model: scripted, retry_backoff_s: 0.01, script: [{rule}, {{reply: fine}}]}}\n"
        "nodes:\n  a: {type: llm.generate, config: {prompt: hi}}\n"
    )
    start = time.perf_counter()
    result = cli("run", str(flow), "--json")
    body = result.json()
    assert body["status"] == status, body["error"]
    call_rows = sqlite3.connect(tmp_path / "flowstudio.db").execute("SELECT error FROM llm_calls").fetchall()
    assert len(call_rows) == calls
    if "retry_after_s" in rule:
        assert time.perf_counter() - start >= 0.4  # two Retry-After waits of 0.2 s


def test_fallback_alias_answers_when_the_first_fails(cli: CLI, tmp_path: Path) -> None:
    flow = tmp_path / "fallback.yaml"
    flow.write_text(
        "flowstudio: 1\nname: fallback\noutputs: {x: $a.text}\nmodels:\n"
        "  default: {model: scripted, fallbacks: [backup], script: [{error: {kind: auth}}]}\n"
        "  backup: {model: scripted, script: [{reply: from backup}]}\n"
        "nodes:\n  a: {type: llm.generate, config: {prompt: hi}}\n"
    )
    assert cli("run", str(flow), "--json").json()["outputs"] == {"x": "from backup"}


@pytest.mark.parametrize(
    ("flag", "calls"),
    [("--max-tokens=5", 2), ("--max-cost=0.000005", 2), ("--max-steps=3", 3)],
)
def test_budgets_stop_before_the_crossing_call_and_survive_resume(cli: CLI, flag: str, calls: int) -> None:
    result = cli("run", str(FIXTURES / "drill.yaml"), "-i", "topic=x", "--no-cache", flag, "--json")
    body = result.json()
    assert result.code == 1 and "budget exceeded" in body["error"]
    assert len([s for s in steps_of(cli, body["run_id"]) if s["status"] == "succeeded"]) == calls
    again = cli("resume", body["run_id"], "--json")
    assert again.code == 1 and "budget exceeded" in again.json()["error"]
    assert cli("resume", body["run_id"], flag.split("=")[0] + "=1000", "--json").code == 0


def test_secrets_never_reach_the_store_traces_or_logs(cli: CLI, tmp_path: Path) -> None:
    canary = "sk-canary-" + "7" * 24
    flow = tmp_path / "secret.yaml"
    flow.write_text(
        "flowstudio: 1\nname: secret\nmodels:\n"
        "  default: {model: openai/gpt-4o-mini, api_key: $env.FLOWSTUDIO_CANARY, api_base: 'http://127.0.0.1:9/v1', retries: 0}\n"
        "nodes:\n  a: {type: llm.generate, config: {prompt: hi}}\n"
    )
    env = {"FLOWSTUDIO_CANARY": canary}
    result = cli("run", str(flow), "--json", env=env)
    assert result.code == 1
    trace = cli("trace", result.json()["run_id"], "--json", env=env)
    listing = cli("runs", "--json", env=env)
    seen = result.out + result.err + trace.out + trace.err + listing.out
    seen += (tmp_path / "flowstudio.db").read_bytes().decode("latin-1")
    for suffix in ("-wal", "-shm"):
        extra = tmp_path / f"flowstudio.db{suffix}"
        if extra.exists():
            seen += extra.read_bytes().decode("latin-1")
    assert canary not in seen and canary[:16] not in seen


def test_concurrent_runs_in_one_process_and_four_processes(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    env = {**os.environ, "FLOWSTUDIO_DB": str(db)}
    script = (
        "import asyncio\n"
        "from studio.runtime.runner import run_flow_async\n"
        "async def main():\n"
        f"    await asyncio.gather(*(run_flow_async({str(FIXTURES / 'chain.yaml')!r}, {{'topic': f't{{i}}'}}) for i in range(32)))\n"
        "asyncio.run(main())\n"
    )
    python = str(Path(FLOWSTUDIO).parent / "python")
    workers = [
        subprocess.Popen([python, "-c", script], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True) for _ in range(4)
    ]
    errors = [w.communicate(timeout=240)[1] for w in workers]
    assert all(w.returncode == 0 for w in workers), errors
    assert not any("locked" in e for e in errors)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM runs WHERE status = 'succeeded'").fetchone()[0] == 128
    assert conn.execute("SELECT count(*) FROM steps").fetchone()[0] == 128 * 3
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


async def test_the_runner_names_neutral_fields_that_each_caller_words(tmp_path: Path) -> None:
    """The runner's errors say `values.NODE`, `run_id`, `from_node`; only the CLI says `--value`."""
    from studio.errors import InputError
    from studio.runtime import runner
    from studio.runtime.engine import Engine
    from studio.store import SQLiteStore

    flow = tmp_path / "approval.yaml"
    flow.write_text((FIXTURES / "approval.yaml").read_text())
    store = SQLiteStore(tmp_path / "runs.db")
    engine = Engine(store)
    waiting = await runner.run_flow_async(flow, {"topic": "tea"}, db=tmp_path / "runs.db")
    with pytest.raises(InputError) as wrong:
        await runner.resume_on(engine, waiting.run_id, values={"draft": True})
    assert wrong.value.field == "values.draft" and "--" not in wrong.value.message
    with pytest.raises(InputError) as refused:
        await runner.resume_on(engine, waiting.run_id, values={"approve": "maybe"})
    assert refused.value.field == "values.approve"
    with pytest.raises(InputError) as unknown:
        await runner.rerun_on(engine, waiting.run_id, "nowhere")
    assert unknown.value.field == "from_node"
    with pytest.raises(InputError) as missing:
        await runner.resume_on(engine, "no-such-run")
    assert missing.value.field == "run_id"
    flow.write_text(flow.read_text().replace("A short draft.", "Another draft."))
    with pytest.raises(runner.FlowChanged) as changed:
        await runner.resume_on(engine, waiting.run_id, values={"approve": True})
    assert "rerun --from" not in changed.value.message  # the CLI adds its own command
    store.close()
