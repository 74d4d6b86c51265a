"""Real providers at batch scale, against the provider simulator (tests/providers_sim.py, a real
server on 127.0.0.1): a batch and an optimizer search through rate limits, 500s and stalls lose
nothing; the provider sees few 429s; failed examples run again with `--retry-errors`; Anthropic's
API is paced alike; `models check` reports the rate-limit headers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from studio.evaluate.batch import BatchOptions, batch
from studio.flow.spec import ModelSpec
from studio.models.base import Message, Request
from studio.models.check import check, describe
from studio.models.litellm_client import LiteLLMModel
from studio.optimize import OptimizeOptions, prepare
from studio.optimize.optimization import Optimization
from studio.store import SQLiteStore
from tests.providers_sim import Schedule, Simulator

FLOW = """flowstudio: 1
name: echo
inputs:
  word: {{type: str}}
outputs:
  word: $echo.text
models:
  default: {{model: {model}, api_base: '{url}', max_tokens: 4, retries: {retries}, retry_backoff_s: 0.05, timeout_s: 2}}
nodes:
  echo: {{type: llm.generate, inputs: {{word: $inputs.word}}, config: {{prompt: 'Repeat: {{{{ word }}}}'}}}}
"""


@pytest.fixture
def simulator() -> Iterator[list[Simulator]]:
    """Start simulators with `simulator.append(Simulator(...))`; all are stopped after the test."""
    started: list[Simulator] = []
    yield started
    for sim in started:
        sim.stop()


def echo(tmp_path: Path, sim: Simulator, examples: int, *, retries: int = 3) -> tuple[str, str]:
    flow = tmp_path / "echo.yaml"
    flow.write_text(FLOW.format(model="openai/sim", url=sim.url + "/v1", retries=retries))
    data = tmp_path / "words.jsonl"
    data.write_text("".join(json.dumps({"word": f"w{i}", "expected": f"w{i}"}) + "\n" for i in range(examples)))
    return str(flow), str(data)


async def test_a_batch_through_rate_limits_500s_and_stalls_loses_nothing(
    tmp_path: Path, simulator: list[Simulator]
) -> None:
    sim = Simulator(Schedule(rate=100, burst=5, fail=0.1, slow=0.05, slow_s=5, seed=7))
    simulator.append(sim)
    flow, data = echo(tmp_path, sim, 40)
    store = SQLiteStore(tmp_path / "b.db")
    options = BatchOptions(flow=flow, data=data, expect={"word": "expected"}, concurrency=16, cache=False)
    result = await batch(options, store)
    stats = sim.stats()
    assert (result.summary["failed"], result.summary["score"]) == (0, 1.0), result.summary
    assert stats["rate_limited"] > 0 and stats["failed"] > 0 and stats["slow"] > 0  # every fault happened
    assert stats["rate_limited"] <= 0.5 * 40
    records = [c for r in store.runs_of_experiment(result.experiment_id) for c in store.calls(r.run_id)]
    kinds = {(c.error or "ok").split(":")[0] for c in records}
    assert {"ok", "rate_limit", "server", "timeout"} <= kinds
    retried = [c for c in records if c.attempt > 1]
    assert retried and all(c.wait_s > 0 for c in retried if "rate_limit" not in (c.error or ""))
    timeouts = [c for c in records if (c.error or "").startswith("timeout")]
    assert all(c.latency_s < 3.0 for c in timeouts)  # the stalls (5 s) were cut at timeout_s
    store.close()


async def test_retry_errors_runs_exactly_the_failed_examples_again(tmp_path: Path, simulator: list[Simulator]) -> None:
    sim = Simulator(Schedule(fail=0.5, seed=3))
    simulator.append(sim)
    flow, data = echo(tmp_path, sim, 12, retries=0)
    store = SQLiteStore(tmp_path / "b.db")
    options = BatchOptions(flow=flow, data=data, expect={"word": "expected"}, concurrency=4, cache=False)
    first = await batch(options, store)
    failed = first.summary["failed"]
    assert 0 < failed < 12 and first.summary["errors_by_kind"] == {"server": failed}
    assert len(first.summary["failed_lines"]) == failed
    sim.control(fail=0)  # the provider recovers
    before = sim.stats()["requests"]
    again = await batch(None, store, resume=first.experiment_id, retry_errors=True)
    assert sim.stats()["requests"] - before == failed  # the others are not paid twice
    assert (again.summary["ran"], again.summary["resumed"]) == (failed, 12 - failed)
    assert (again.summary["failed"], again.summary["score"], again.summary["errors_by_kind"]) == (0, 1.0, {})
    third = await batch(None, store, resume=first.experiment_id, retry_errors=True)
    assert third.summary["ran"] == 0 and sim.stats()["requests"] - before == failed  # nothing left to retry
    store.close()


async def test_an_optimizer_search_through_the_faults_loses_nothing(tmp_path: Path, simulator: list[Simulator]) -> None:
    sim = Simulator(Schedule(rate=40, burst=2, fail=0.1, slow=0.03, slow_s=5, seed=11))
    simulator.append(sim)
    flow, data = echo(tmp_path, sim, 16)
    options = OptimizeOptions(
        flow=flow,
        train=data,
        dev=data,
        metric="exact",
        budget_calls=60,
        proposer="none",
        expect={"word": "expected"},
        concurrency=8,
        minibatch=4,
        width=3,
        max_rounds=2,
    )
    store = SQLiteStore(tmp_path / "o.db")
    result = await Optimization(prepare(options), store).run()
    report = result.report
    assert report["before"]["dev"] == 1.0 and report["after"]["dev"] == 1.0  # a lost example would score 0
    runs = store.runs_of_experiment(report["experiment_id"])
    assert runs and all(r.status == "succeeded" for r in runs)
    stats = sim.stats()
    assert stats["failed"] > 0 and stats["rate_limited"] > 0
    store.close()


async def test_anthropic_calls_are_paced_by_the_same_limiter(simulator: list[Simulator]) -> None:
    sim = Simulator(Schedule(rate=50, burst=2, seed=5))
    simulator.append(sim)
    spec = ModelSpec(model="anthropic/claude-3-haiku-20240307", api_base=sim.url, max_tokens=4)
    client = LiteLLMModel(spec)
    request = Request(messages=(Message("user", "say hello"),), max_tokens=4)
    first = await client.complete(request)
    assert first.text == "hello" and first.limit_headers is not None
    assert first.limit_headers["anthropic-ratelimit-requests-limit"] == "3000"
    outcomes: list[Any] = await asyncio.gather(*(client.complete(request) for _ in range(12)), return_exceptions=True)
    limited = [o for o in outcomes if not hasattr(o, "text")]  # a 429 reaches the caller: the binding retries it
    assert limited and all(getattr(o, "kind", "") == "rate_limit" for o in limited)
    assert client.limiter is not None and client.limiter.current_rate() == pytest.approx(50)  # as announced


async def test_models_check_reports_the_rate_limit_headers(simulator: list[Simulator], tmp_path: Path) -> None:
    sim = Simulator(Schedule(rate=20, burst=5))
    simulator.append(sim)
    result = await check("default", ModelSpec(model="openai/sim", api_base=sim.url + "/v1"), tmp_path)
    assert result.error is None and result.rate_limits is not None
    assert result.rate_limits["x-ratelimit-limit-requests"] == "1200"
    assert "x-ratelimit-limit-requests: 1200" in describe(result)
