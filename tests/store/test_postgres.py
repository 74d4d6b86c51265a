"""The PostgreSQL store's own guarantees, beyond the shared suites: migration once, group commit, durability."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import psycopg

from studio.store.base import RunRecord, StepRecord
from studio.store.postgres import SCHEMA_VERSION, PostgresStore
from studio.store.recorder import Recorder


def _run(run_id: str) -> RunRecord:
    return RunRecord(run_id=run_id, flow="f", flow_path=None, flow_hash="h", inputs={})


def test_the_schema_is_made_once_even_by_replicas_opening_together(postgres_url: str) -> None:
    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(lambda _: PostgresStore(postgres_url), range(4)))
    for store in stores:
        store.close()
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM flowstudio_schema").fetchall() == [(SCHEMA_VERSION,)]


def test_a_committed_step_is_seen_by_another_connection_and_concurrent_steps_share_transactions(
    postgres_url: str,
) -> None:
    store = PostgresStore(postgres_url)
    seen: list[int] = []

    async def one(run_id: str) -> None:
        recorder = Recorder(store)
        recorder.create_run(_run(run_id))
        for node in ("a", "b", "c"):
            await recorder.finish_step(run_id, StepRecord(node=node, status="succeeded", tokens=1), [])
            with psycopg.connect(postgres_url) as conn:  # durable before the next step starts
                row = conn.execute("SELECT count(*) FROM steps WHERE run_id = %s AND node = %s", (run_id, node))
                seen.append(row.fetchone()[0])  # type: ignore[index]
        await recorder.finish_run(run_id, status="succeeded", outputs={}, error=None)

    async def many() -> None:
        await asyncio.gather(*(one(f"r{n}") for n in range(20)))

    asyncio.run(many())
    assert seen == [1] * 60
    assert store.writer is not None and store.writer.writes == 20 * 5
    assert store.writer.transactions < store.writer.writes  # group commit: writes shared transactions
    assert {r.status for r in store.query_runs(limit=100)} == {"succeeded"}
    assert all(r.steps == 3 and r.tokens == 3 for r in store.query_runs(limit=100))
    store.close()


def test_a_bad_write_fails_alone(postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    recorder = Recorder(store)

    async def both() -> tuple[BaseException | None, BaseException | None]:
        recorder.create_run(_run("ok"))
        return await asyncio.gather(
            recorder.settled(), recorder.finish_step("missing", StepRecord("a", "succeeded"), []),
            return_exceptions=True,
        )  # fmt: skip

    first, second = asyncio.run(both())
    assert first is None and isinstance(second, psycopg.errors.ForeignKeyViolation)
    assert store.get_run("ok") is not None
    store.close()
