"""What the engine and the viewers need from a store, and the records they exchange.

The protocol is split by concern: `RunStore` (runs, steps, calls), `LLMCache`, `ExperimentStore`;
`Store` is all three. Each concern has its conformance suite in tests/store/, run against every store.
Every operation is synchronous: a write returns once its transaction is committed. The engine
awaits the same writes through `studio.store.recorder.Recorder`, which queues them on a store's
group-commit writer where it has one.

Records are JSON-ready dataclasses: the store never pickles anything.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from studio.errors import ErrorKind, InputError

RunStatus = Literal["running", "succeeded", "failed", "waiting", "cancelled", "interrupted"]
"""`interrupted` is never written: a store reads it for a run left `running` by a process of this
host that is gone (killed, crashed), so nothing shows it running forever; `resume` continues it."""
IdKind = Literal["run", "experiment"]
StepStatus = Literal["succeeded", "failed", "skipped", "waiting"]


_SECOND: tuple[int, str] = (-1, "")
"""The second `now` last formatted, and its text up to the seconds (one assignment: thread-safe)."""


def now() -> str:
    """UTC timestamp with microseconds, ISO 8601, as `isoformat(timespec="microseconds")` writes
    it (`2026-12-06T05:33:19.633198+00:00`); the date and time of day are formatted once a second
    (a run writes two per step: this took a twentieth of a no-op step)."""
    global _SECOND
    second, micro = divmod(time.time_ns() // 1000, 1_000_000)
    known, text = _SECOND
    if second != known:
        text = dt.datetime.fromtimestamp(second, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _SECOND = (second, text)
    return f"{text}.{micro:06d}+00:00"


def this_host() -> str:
    """The host name a run's process is recorded with."""
    return socket.gethostname()


def new_id() -> str:
    """A fresh 16-hex-digit id for a run or an experiment."""
    return uuid.uuid4().hex[:16]


@dataclass
class RunRecord:
    """One execution of a flow."""

    run_id: str
    """The run's id (16 hex digits)."""
    flow: str
    """The flow's `name`."""
    flow_path: str | None
    """The flow file the run read; None for a flow given as text."""
    flow_hash: str
    """Hash of the flow text, so a resume can refuse an edited flow."""
    inputs: dict[str, Any]
    """The flow inputs, checked and completed with defaults."""
    status: RunStatus = "running"
    """`running`, then `succeeded`, `failed`, `waiting` or `cancelled`; read as `interrupted` when
    its process is gone."""
    outputs: dict[str, Any] | None = None
    """The flow outputs once the run succeeded."""
    error: str | None = None
    """Why the run failed or what it waits for."""
    tokens: int = 0
    """Tokens of every model call, summed over the steps."""
    cost_usd: float = 0.0
    """USD of every model call, summed over the steps."""
    steps: int = 0
    """How many steps were recorded."""
    started_at: str = field(default_factory=now)
    """ISO 8601, UTC."""
    ended_at: str | None = None
    """ISO 8601, UTC; None while the run is running (or after a crash)."""
    parent_run_id: str | None = None
    """The run a rerun started from."""
    experiment_id: str | None = None
    """The experiment (batch, optimizer search) the run belongs to."""
    options: dict[str, Any] = field(default_factory=dict)
    """The RunOptions as JSON: what a resume keeps."""
    pid: int | None = field(default_factory=os.getpid)
    """The id of the process running it (the last one to resume it); None for runs recorded before it was kept."""
    host: str | None = field(default_factory=this_host)
    """The host of that process: only there can a store tell whether it is gone."""
    version: str | None = None
    """The flow version it ran: a published version's id, else the content hash of the working files."""


@dataclass
class CallRecord:
    """One model call made by a step."""

    node: str
    """The calling step's path (`map[2].summarise`)."""
    model: str
    """The model string called: the alias's, or a fallback alias's."""
    request: dict[str, Any]
    """The request as JSON: messages or prompt, and parameters."""
    response: str | None
    """The reply text; None when the call failed."""
    input_tokens: int = 0
    """Prompt tokens."""
    output_tokens: int = 0
    """Generated tokens."""
    cost_usd: float = 0.0
    """What the call cost (0 for a cache hit or a local model)."""
    latency_s: float = 0.0
    """Seconds the call took."""
    cache_hit: bool = False
    """Whether the reply came from the LLM cache."""
    error: str | None = None
    """Why the call failed (`kind: message`); None when it succeeded."""
    started_at: str = field(default_factory=now)
    """ISO 8601, UTC."""
    attempt: int = 1
    """Which attempt at the call this was: 1 the first, retries count on (a fallback alias starts at 1)."""
    wait_s: float = 0.0
    """Seconds waited before this attempt went out: the backoff after the last one, `Retry-After`
    and the model's rate limiter."""

    @property
    def purpose(self) -> str:
        """`answer`, or `probe` for a call its node only measured (scores, a calibration), which was
        not streamed as the answer; kept in the recorded request (`studio.node.CallPurpose`)."""
        return str(self.request.get("purpose", "answer")) if isinstance(self.request, dict) else "answer"


@dataclass
class StepRecord:
    """One node execution (or skip) within a run."""

    node: str
    """The step's path: the node id, under its parents inside sub-flows (`map[2].summarise`)."""
    status: StepStatus
    """`succeeded`, `failed`, `skipped` or `waiting`."""
    inputs: dict[str, Any] | None = None
    """The values the node was given, wires resolved."""
    outputs: dict[str, Any] | None = None
    """The node's outputs when it succeeded."""
    error: str | None = None
    """Why the step failed, or the prompt of a waiting step."""
    error_kind: ErrorKind | None = None
    """The failure class (`ErrorKind`)."""
    attempt: int = 1
    """The attempt that finished the step (1 unless `retry:` ran it again)."""
    tokens: int = 0
    """Tokens of the step's model calls."""
    cost_usd: float = 0.0
    """USD of the step's model calls."""
    started_at: str = field(default_factory=now)
    """ISO 8601, UTC."""
    ended_at: str = field(default_factory=now)
    """ISO 8601, UTC."""
    cached: bool = False
    """Whether every model call of the step was a cache hit."""
    reused: bool = False
    """Whether a rerun copied the step from its parent run instead of running it."""


@dataclass
class ExperimentRecord:
    """A group of runs made for one purpose: a batch evaluation, an optimizer search."""

    experiment_id: str
    """The experiment's id (16 hex digits)."""
    kind: str
    """`batch` or `optimize`."""
    flow: str
    """The flow's `name`."""
    config: dict[str, Any] = field(default_factory=dict)
    """What was run: flow path and hash, dataset, mapping, metric, options."""
    summary: dict[str, Any] | None = None
    """The result, set when the experiment finishes; None while it runs (or after a crash)."""
    created_at: str = field(default_factory=now)
    """ISO 8601, UTC."""


@dataclass(frozen=True)
class RunFilter:
    """Which runs a listing shows; `since`/`until` compare with `started_at` (ISO, UTC, until exclusive)."""

    flow: str | None = None
    status: str | None = None
    since: str | None = None
    until: str | None = None
    experiment_id: str | None = None
    version: str | None = None
    """A version id or its beginning."""

    def accepts(self, run: RunRecord) -> bool:
        """The same test the SQL `WHERE` makes (and the status as read), for stores kept in memory."""
        return (
            (self.flow is None or run.flow == self.flow)
            and (self.status is None or run.status == self.status)
            and (self.since is None or run.started_at >= self.since)
            and (self.until is None or run.started_at < self.until)
            and (self.experiment_id is None or run.experiment_id == self.experiment_id)
            and (self.version is None or (run.version or "").startswith(self.version))
        )


def owner_gone(run: RunRecord) -> bool:
    """Whether a `running` run's process is known to be gone: recorded on this host, and no
    process has that id any more (or the one that has it started after the run did)."""
    if run.status != "running" or run.pid is None or run.host != this_host():
        return False
    if run.pid == os.getpid():
        return False
    return not process_exists(run.pid) or _started_after(run.pid, run.started_at)


def process_exists(pid: int) -> bool:
    """Whether some process on this host has id `pid` (another user's counts too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _started_after(pid: int, started_at: str) -> bool:
    """Whether process `pid` started after `started_at` (its id was reused); False when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
        boot = next(
            line for line in Path("/proc/stat").read_text(encoding="ascii").splitlines() if line.startswith("btime")
        )
        ticks = int(stat.rsplit(")", 1)[1].split()[19])
        began = int(boot.split()[1]) + ticks / os.sysconf("SC_CLK_TCK")
        return began > dt.datetime.fromisoformat(started_at).timestamp() + 1
    except (OSError, ValueError, IndexError, StopIteration):
        return False


def as_read(run: RunRecord) -> RunRecord:
    """The run as stores show it: `interrupted` when it was left `running` by a process that is gone."""
    if owner_gone(run):
        run.status = "interrupted"
    return run


class RunStore(Protocol):
    """Runs, their steps and model calls. One finished step is one atomic write."""

    def create_run(self, run: RunRecord, flow_text: str | None = None) -> None:
        """Record a new run (status `running`), with the flow text it ran."""
        ...

    def flow_text(self, run_id: str) -> str | None:
        """The flow text a run was started with; None when it was not stored."""
        ...

    def finish_step(self, run_id: str, step: StepRecord, calls: list[CallRecord]) -> None:
        """Write one finished step and its model calls in one transaction (the checkpoint)."""
        ...

    def finish_run(
        self,
        run_id: str,
        *,
        status: RunStatus,
        outputs: dict[str, Any] | None,
        error: str | None,
    ) -> RunRecord:
        """Make a run final: status, outputs, error and its totals over the steps; returns it."""
        ...

    def set_status(self, run_id: str, status: RunStatus) -> None:
        """Set a run's status (a resume sets `running` again)."""
        ...

    def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or None when the store has none by that id."""
        ...

    def steps(self, run_id: str) -> list[StepRecord]:
        """The run's steps, in the order they finished."""
        ...

    def calls(self, run_id: str) -> list[CallRecord]:
        """The run's model calls, in the order they were made."""
        ...

    def query_runs(self, where: RunFilter | None = None, *, offset: int = 0, limit: int = 50) -> list[RunRecord]:
        """One page of runs matching `where` (None: all), newest first (read-only)."""
        ...

    def count_runs(self, where: RunFilter | None = None) -> int:
        """How many runs match `where` (read-only)."""
        ...

    def flow_names(self) -> list[str]:
        """Every flow name that has a run, sorted (read-only)."""
        ...

    def import_run(
        self, run: RunRecord, flow_text: str | None, steps: list[tuple[StepRecord, list[CallRecord]]]
    ) -> None:
        """Write a finished run made elsewhere (a Ray worker), as is, in one transaction."""
        ...


class LLMCache(Protocol):
    """Model replies by content address (`studio.runtime.llm.cache_key`): a repeated call is served from here."""

    def cache_get(self, key: str) -> dict[str, Any] | None:
        """The reply stored under `key`, or None."""
        ...

    def cache_put(self, key: str, model: str, response: dict[str, Any]) -> None:
        """Store a reply under `key` (a later put replaces it)."""
        ...


class ExperimentStore(Protocol):
    """Experiments (a batch evaluation, an optimizer search) and the runs made for them."""

    def create_experiment(self, experiment: ExperimentRecord) -> None:
        """Record a new experiment (no summary yet)."""
        ...

    def finish_experiment(self, experiment_id: str, summary: dict[str, Any]) -> ExperimentRecord:
        """Store the experiment's summary; returns the experiment."""
        ...

    def get_experiment(self, experiment_id: str) -> ExperimentRecord | None:
        """The experiment, or None when the store has none by that id."""
        ...

    def list_experiments(self, *, limit: int = 50, kind: str | None = None) -> list[ExperimentRecord]:
        """The newest experiments first, optionally of one kind."""
        ...

    def runs_of_experiment(self, experiment_id: str) -> list[RunRecord]:
        """The experiment's runs, oldest first."""
        ...


class Store(RunStore, LLMCache, ExperimentStore, Protocol):
    """A whole store: every concern above, and `close`."""

    def close(self) -> None:
        """Release the store (the SQLite connection); nothing is lost."""
        ...

    def ids_with_prefix(self, kind: IdKind, prefix: str, limit: int = 3) -> list[str]:
        """Up to `limit` run or experiment ids that start with `prefix`, sorted (read-only)."""
        ...


def step_row(step: StepRecord) -> dict[str, Any]:
    """One entry of `flowstudio trace RUN_ID --json`."""
    return {
        "node": step.node,
        "status": step.status,
        "attempt": step.attempt,
        "inputs": step.inputs,
        "outputs": step.outputs,
        "error": step.error,
        "tokens": step.tokens,
        "cost_usd": round(step.cost_usd, 10),
        "started_at": step.started_at,
        "ended_at": step.ended_at,
        "cached": step.cached,
        "reused": step.reused,
    }


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
