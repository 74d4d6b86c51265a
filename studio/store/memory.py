"""A store in memory: for tests, benchmarks and throwaway runs."""

from __future__ import annotations

import copy
from typing import Any

from studio.store.base import CallRecord, RunRecord, RunStatus, StepRecord, now


class MemoryStore:
    """Same contract as the SQLite store, kept in dictionaries."""

    def __init__(self) -> None:
        self._runs: dict[str, RunRecord] = {}
        self._steps: dict[str, list[StepRecord]] = {}
        self._calls: dict[str, list[CallRecord]] = {}
        self._flow_texts: dict[str, str | None] = {}

    def flow_text(self, run_id: str) -> str | None:
        return self._flow_texts.get(run_id)

    def create_run(self, run: RunRecord, flow_text: str | None = None) -> None:
        if run.run_id in self._runs:
            raise ValueError(f"run {run.run_id} exists")
        self._flow_texts[run.run_id] = flow_text
        self._runs[run.run_id] = copy.deepcopy(run)
        self._steps[run.run_id] = []
        self._calls[run.run_id] = []

    def finish_step(self, run_id: str, step: StepRecord, calls: list[CallRecord]) -> None:
        run = self._runs[run_id]
        self._steps[run_id].append(copy.deepcopy(step))
        self._calls[run_id].extend(copy.deepcopy(calls))
        run.tokens += step.tokens
        run.cost_usd += step.cost_usd
        run.steps += 1

    def finish_run(
        self, run_id: str, *, status: RunStatus, outputs: dict[str, Any] | None, error: str | None
    ) -> RunRecord:
        run = self._runs[run_id]
        run.status, run.outputs, run.error, run.ended_at = status, copy.deepcopy(outputs), error, now()
        return copy.deepcopy(run)

    def get_run(self, run_id: str) -> RunRecord | None:
        run = self._runs.get(run_id)
        return copy.deepcopy(run) if run else None

    def list_runs(self, *, limit: int = 50, flow: str | None = None, status: str | None = None) -> list[RunRecord]:
        runs = [
            r
            for r in self._runs.values()
            if (flow is None or r.flow == flow) and (status is None or r.status == status)
        ]
        runs.sort(key=lambda r: r.started_at, reverse=True)
        return [copy.deepcopy(r) for r in runs[:limit]]

    def steps(self, run_id: str) -> list[StepRecord]:
        return copy.deepcopy(self._steps.get(run_id, []))

    def calls(self, run_id: str) -> list[CallRecord]:
        return copy.deepcopy(self._calls.get(run_id, []))

    def close(self) -> None:
        pass
