"""Retries that fit the fault: rate limits are waited out within `rate_limit_wait_s` and do not
spend `retries`; server errors and timeouts get `retries` more attempts after full-jitter backoff;
auth errors and bad requests none. Every attempt is a call record with its number and wait."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from studio.errors import ErrorKind
from studio.flow.spec import ModelSpec
from studio.models.base import ModelError
from studio.runtime.llm import MAX_DELAY_S, Retry
from studio.runtime.runner import run_flow_async
from studio.store import SQLiteStore
from studio.store.base import CallRecord
from tests.conftest import CLI


def error(kind: ErrorKind, retry_after_s: float | None = None) -> ModelError:
    return ModelError(kind, "simulated", retry_after_s)


def test_rate_limits_are_waited_out_within_the_budget_not_counted_as_retries() -> None:
    retry = Retry(ModelSpec(model="m", retries=0, rate_limit_wait_s=10))
    delays = [retry.after(error("rate_limit", 1.0)) for _ in range(5)]
    assert delays == [1.0] * 5 and retry.attempt == 6  # retries: 0 does not stop them
    assert retry.after(error("rate_limit", 60.0)) is None  # past the budget: final


def test_a_rate_limit_without_retry_after_backs_off_with_full_jitter() -> None:
    random.seed(3)
    retry = Retry(ModelSpec(model="m", retry_backoff_s=1.0))
    delays = [retry.after(error("rate_limit")) for _ in range(6)]
    assert all(d is not None and 0 <= d <= min(2**i, MAX_DELAY_S) for i, d in enumerate(delays))
    assert len({round(d or 0, 6) for d in delays}) == 6  # jittered: no two alike


@pytest.mark.parametrize("kind", ["server", "timeout", "bad_json"])
def test_transient_faults_get_the_alias_retries(kind: ErrorKind) -> None:
    retry = Retry(ModelSpec(model="m", retries=2, retry_backoff_s=0.5))
    first, second = retry.after(error(kind)), retry.after(error(kind))
    assert first is not None and 0 <= first <= 0.5 and second is not None and 0 <= second <= 1.0
    assert retry.after(error(kind)) is None and retry.attempt == 3


def test_a_server_error_honours_retry_after_up_to_the_cap() -> None:
    retry = Retry(ModelSpec(model="m"))
    assert retry.after(error("server", 2.0)) == 2.0
    assert retry.after(error("server", 600.0)) == MAX_DELAY_S


@pytest.mark.parametrize("kind", ["auth", "bad_request", "context_overflow", "budget"])
def test_what_would_fail_again_is_never_retried(kind: ErrorKind) -> None:
    retry = Retry(ModelSpec(model="m", retries=5))
    assert retry.after(error(kind)) is None and retry.attempt == 1


FLOW = """flowstudio: 1
name: retries
outputs: {{text: $a.text}}
models:
  default:
    model: scripted
    retries: 1
    retry_backoff_s: 0.01
    rate_limit_wait_s: {budget}
    script: [{{error: {{kind: rate_limit, times: {times}, retry_after_s: 0.05}}}}, {{error: {{kind: server, times: 1}}}}, {{reply: done}}]
nodes:
  a: {{type: llm.generate, config: {{prompt: hi}}}}
"""


async def attempts(tmp_path: Path, budget: float, times: int) -> tuple[str, list[CallRecord]]:
    path = tmp_path / "retries.yaml"
    path.write_text(FLOW.format(budget=budget, times=times))
    result = await run_flow_async(path, {}, db=tmp_path / "r.db")
    store = SQLiteStore(tmp_path / "r.db")
    try:
        return result.status, store.calls(result.run_id)
    finally:
        store.close()


async def test_every_attempt_is_recorded_with_its_number_and_wait(tmp_path: Path) -> None:
    status, records = await attempts(tmp_path, budget=5, times=4)
    assert status == "succeeded"
    assert [r.attempt for r in records] == [1, 2, 3, 4, 5, 6]
    assert [(r.error or "ok").split(":")[0] for r in records] == ["rate_limit"] * 4 + ["server", "ok"]
    assert records[0].wait_s == 0.0
    assert all(r.wait_s == pytest.approx(0.05) for r in records[1:5])  # Retry-After
    assert 0 <= records[5].wait_s <= 0.01  # the server error's jittered backoff


async def test_rate_limits_past_the_budget_fail_the_call(tmp_path: Path) -> None:
    status, records = await attempts(tmp_path, budget=0.2, times=50)
    assert status == "failed"
    assert 3 <= len(records) <= 6 and all((r.error or "").startswith("rate_limit") for r in records)


def test_trace_full_shows_each_attempt_and_its_wait(cli: CLI, tmp_path: Path) -> None:
    path = tmp_path / "retries.yaml"
    path.write_text(FLOW.format(budget=5, times=1))
    run = cli("run", str(path), "--json")
    assert run.code == 0, run.err
    shown = cli("trace", run.json()["run_id"], "--full").out
    assert "model call to scripted (0+0 tokens)" in shown  # the first attempt: no retry, no wait
    assert "attempt 2, waited 0.05 s" in shown and "attempt 3" in shown
