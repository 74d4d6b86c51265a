"""What the engine and the viewers need from a store, and the records they exchange.

Records are JSON-ready dataclasses: the store never pickles anything.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from studio.errors import InputError

RunStatus = Literal["running", "succeeded", "failed", "waiting"]
IdKind = Literal["run", "experiment"]
StepStatus = Literal["succeeded", "failed", "skipped", "waiting"]


def now() -> str:
    """UTC timestamp with microseconds, ISO 8601."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")


def new_id() -> str:
    return uuid.uuid4().hex[:16]


@dataclass
class RunRecord:
    """One execution of a flow."""

    run_id: str
    flow: str
    flow_path: str | None
    flow_hash: str
    inputs: dict[str, Any]
    status: RunStatus = "running"
    outputs: dict[str, Any] | None = None
    error: str | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    steps: int = 0
    started_at: str = field(default_factory=now)
    ended_at: str | None = None
    parent_run_id: str | None = None
    experiment_id: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class CallRecord:
    """One model call made by a step."""

    node: str
    model: str
    request: dict[str, Any]
    response: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    cache_hit: bool = False
    error: str | None = None
    started_at: str = field(default_factory=now)


@dataclass
class StepRecord:
    """One node execution (or skip) within a run."""

    node: str
    status: StepStatus
    inputs: dict[str, Any] | None = None
    outputs: dict[str, Any] | None = None
    error: str | None = None
    error_kind: str | None = None
    attempt: int = 1
    tokens: int = 0
    cost_usd: float = 0.0
    started_at: str = field(default_factory=now)
    ended_at: str = field(default_factory=now)
    cached: bool = False
    reused: bool = False


@dataclass
class ExperimentRecord:
    """A group of runs made for one purpose: a batch evaluation, an optimizer search."""

    experiment_id: str
    kind: str
    flow: str
    config: dict[str, Any] = field(default_factory=dict)
    """What was run: flow path and hash, dataset, mapping, metric, options."""
    summary: dict[str, Any] | None = None
    """The result, set when the experiment finishes; None while it runs (or after a crash)."""
    created_at: str = field(default_factory=now)


@dataclass(frozen=True)
class RunFilter:
    """Which runs a listing shows; `since`/`until` compare with `started_at` (ISO, UTC, until exclusive)."""

    flow: str | None = None
    status: str | None = None
    since: str | None = None
    until: str | None = None
    experiment_id: str | None = None

    def accepts(self, run: RunRecord) -> bool:
        """The same test the SQL `WHERE` makes, for stores kept in memory."""
        return (
            (self.flow is None or run.flow == self.flow)
            and (self.status is None or run.status == self.status)
            and (self.since is None or run.started_at >= self.since)
            and (self.until is None or run.started_at < self.until)
            and (self.experiment_id is None or run.experiment_id == self.experiment_id)
        )


class Store(Protocol):
    """Runs, their steps and model calls. One finished step is one atomic write."""

    def create_run(self, run: RunRecord, flow_text: str | None = None) -> None: ...

    def flow_text(self, run_id: str) -> str | None: ...

    def finish_step(self, run_id: str, step: StepRecord, calls: list[CallRecord]) -> None: ...

    def finish_run(
        self,
        run_id: str,
        *,
        status: RunStatus,
        outputs: dict[str, Any] | None,
        error: str | None,
    ) -> RunRecord: ...

    def set_status(self, run_id: str, status: RunStatus) -> None: ...

    def get_run(self, run_id: str) -> RunRecord | None: ...

    def cache_get(self, key: str) -> dict[str, Any] | None: ...

    def cache_put(self, key: str, model: str, response: dict[str, Any]) -> None: ...

    def list_runs(self, *, limit: int = 50, flow: str | None = None, status: str | None = None) -> list[RunRecord]: ...

    def steps(self, run_id: str) -> list[StepRecord]: ...

    def calls(self, run_id: str) -> list[CallRecord]: ...

    def query_runs(self, where: RunFilter | None = None, *, offset: int = 0, limit: int = 50) -> list[RunRecord]:
        """One page of runs matching `where` (None: all), newest first (read-only)."""
        ...

    def count_runs(self, where: RunFilter | None = None) -> int:
        """How many runs match `where` (read-only)."""
        ...

    def flow_names(self) -> list[str]:
        """Every flow name that has a run, sorted (read-only)."""
        ...

    def close(self) -> None: ...

    def import_run(
        self, run: RunRecord, flow_text: str | None, steps: list[tuple[StepRecord, list[CallRecord]]]
    ) -> None:
        """Write a finished run made elsewhere (a Ray worker), as is, in one transaction."""
        ...

    def create_experiment(self, experiment: ExperimentRecord) -> None: ...

    def finish_experiment(self, experiment_id: str, summary: dict[str, Any]) -> ExperimentRecord: ...

    def get_experiment(self, experiment_id: str) -> ExperimentRecord | None: ...

    def list_experiments(self, *, limit: int = 50, kind: str | None = None) -> list[ExperimentRecord]: ...

    def runs_of_experiment(self, experiment_id: str) -> list[RunRecord]:
        """The experiment's runs, oldest first."""
        ...

    def ids_with_prefix(self, kind: IdKind, prefix: str, limit: int = 3) -> list[str]:
        """Up to `limit` run or experiment ids that start with `prefix`, sorted (read-only)."""
        ...


def resolve_id(store: Store, kind: IdKind, given: str) -> str:
    """The one id `given` is, or the unique id it begins; InputError naming the others otherwise."""
    found = store.ids_with_prefix(kind, given, limit=4)
    if given in found:
        return given
    if len(found) == 1:
        return found[0]
    field = "RUN_ID" if kind == "run" else "EXPERIMENT_ID"
    if not found:
        where = f" in {store.path}" if hasattr(store, "path") else ""
        raise InputError(f"no {kind} {given!r}{where} (nor one whose id begins so)", field=field)
    shown = ", ".join(found[:3]) + (", ..." if len(found) > 3 else "")
    raise InputError(f"{given!r} begins more than one {kind} id ({shown}); give more characters", field=field)
