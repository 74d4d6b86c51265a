"""A store in memory: for tests, benchmarks and throwaway runs."""

from __future__ import annotations

import copy
import dataclasses
import os
from typing import Any, TypeVar

from studio import secrets
from studio.store.base import (
    CallRecord,
    ExperimentRecord,
    IdKind,
    RunFilter,
    RunRecord,
    RunStatus,
    StepRecord,
    now,
    this_host,
)
from studio.store.feedback import MemoryFeedback
from studio.store.versions import MemoryVersions


class MemoryStore(MemoryVersions, MemoryFeedback):
    """Same contract as the SQLite store, kept in dictionaries."""

    def __init__(self) -> None:
        self._runs: dict[str, RunRecord] = {}
        self._steps: dict[str, list[StepRecord]] = {}
        self._calls: dict[str, list[CallRecord]] = {}
        self._flow_texts: dict[str, str | None] = {}
        self._experiments: dict[str, ExperimentRecord] = {}
        self._cache: dict[str, dict[str, Any]] = {}

    def flow_text(self, run_id: str) -> str | None:
        return self._flow_texts.get(run_id)

    def create_run(self, run: RunRecord, flow_text: str | None = None) -> None:
        if run.run_id in self._runs:
            raise ValueError(f"run {run.run_id} exists")
        self._flow_texts[run.run_id] = flow_text
        self._runs[run.run_id] = _masked(run)
        self._steps[run.run_id] = []
        self._calls[run.run_id] = []

    def finish_step(self, run_id: str, step: StepRecord, calls: list[CallRecord]) -> None:
        run = self._runs[run_id]
        # Records are stored as masked copies, and every read hands out deep copies, so callers
        # cannot change what is stored.
        self._steps[run_id].append(_masked(step))
        self._calls[run_id].extend(_masked(call) for call in calls)
        run.tokens += step.tokens
        run.cost_usd += step.cost_usd
        run.steps += 1

    def finish_run(
        self, run_id: str, *, status: RunStatus, outputs: dict[str, Any] | None, error: str | None
    ) -> RunRecord:
        run = self._runs[run_id]
        run.status, run.outputs, run.error, run.ended_at = status, secrets.masked_copy(outputs), error, now()
        run.error = secrets.mask(error)
        return copy.deepcopy(run)

    def set_status(self, run_id: str, status: RunStatus) -> None:
        run = self._runs[run_id]
        run.status, run.pid, run.host = status, os.getpid(), this_host()

    def cache_get(self, key: str) -> dict[str, Any] | None:
        hit = self._cache.get(key)
        return copy.deepcopy(hit) if hit else None

    def cache_put(self, key: str, model: str, response: dict[str, Any]) -> None:
        self._cache[key] = secrets.masked_copy(response)

    def get_run(self, run_id: str) -> RunRecord | None:
        run = self._runs.get(run_id)
        return copy.deepcopy(run) if run else None

    def steps(self, run_id: str) -> list[StepRecord]:
        return copy.deepcopy(self._steps.get(run_id, []))

    def calls(self, run_id: str) -> list[CallRecord]:
        return copy.deepcopy(self._calls.get(run_id, []))

    def import_run(
        self, run: RunRecord, flow_text: str | None, steps: list[tuple[StepRecord, list[CallRecord]]]
    ) -> None:
        self.create_run(run, flow_text)
        self._steps[run.run_id] = [copy.deepcopy(step) for step, _ in steps]
        self._calls[run.run_id] = [copy.deepcopy(call) for _, calls in steps for call in calls]

    def create_experiment(self, experiment: ExperimentRecord) -> None:
        if experiment.experiment_id in self._experiments:
            raise ValueError(f"experiment {experiment.experiment_id} exists")
        self._experiments[experiment.experiment_id] = copy.deepcopy(experiment)

    def finish_experiment(self, experiment_id: str, summary: dict[str, Any]) -> ExperimentRecord:
        experiment = self._experiments[experiment_id]
        experiment.summary = copy.deepcopy(summary)
        return copy.deepcopy(experiment)

    def get_experiment(self, experiment_id: str) -> ExperimentRecord | None:
        experiment = self._experiments.get(experiment_id)
        return copy.deepcopy(experiment) if experiment else None

    def list_experiments(self, *, limit: int = 50, kind: str | None = None) -> list[ExperimentRecord]:
        found = [e for e in self._experiments.values() if kind is None or e.kind == kind]
        found.sort(key=lambda e: e.created_at, reverse=True)
        return [copy.deepcopy(e) for e in found[:limit]]

    def runs_of_experiment(self, experiment_id: str) -> list[RunRecord]:
        runs = [r for r in self._runs.values() if r.experiment_id == experiment_id]
        runs.sort(key=lambda r: r.started_at)
        return [copy.deepcopy(r) for r in runs]

    def ids_with_prefix(self, kind: IdKind, prefix: str, limit: int = 3) -> list[str]:
        ids = self._runs if kind == "run" else self._experiments
        return sorted(i for i in ids if i.startswith(prefix))[:limit]

    def query_runs(self, where: RunFilter | None = None, *, offset: int = 0, limit: int = 50) -> list[RunRecord]:
        where = where or RunFilter()
        runs = [r for r in self._runs.values() if where.accepts(r)]
        order = {run_id: number for number, run_id in enumerate(self._runs)}
        runs.sort(key=lambda r: (r.started_at, order[r.run_id]), reverse=True)
        return [copy.deepcopy(r) for r in runs[offset : offset + limit]]

    def count_runs(self, where: RunFilter | None = None) -> int:
        where = where or RunFilter()
        return sum(1 for r in self._runs.values() if where.accepts(r))

    def flow_names(self) -> list[str]:
        return sorted({r.flow for r in self._runs.values()})

    def close(self) -> None:
        pass


Masked = TypeVar("Masked", RunRecord, StepRecord, CallRecord)


def _masked(record: Masked) -> Masked:
    """A copy of the record with every remembered `$env` value masked (its fields hold JSON-like
    values: copied field by field, far cheaper than `dataclasses.asdict`'s generic deep copy)."""
    fields = {name: getattr(record, name) for name in _FIELD_NAMES[type(record)]}
    return type(record)(**secrets.masked_copy(fields))


_FIELD_NAMES = {kind: tuple(f.name for f in dataclasses.fields(kind)) for kind in (RunRecord, StepRecord, CallRecord)}
