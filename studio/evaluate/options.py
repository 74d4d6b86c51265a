"""What a batch is: the options that decide its results, stored with its experiment so a
resume continues it as it started."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from studio.errors import InputError
from studio.evaluate.datasets import Dataset
from studio.runtime.compiler import Plan
from studio.store.base import Store

KIND = "batch"
DEFAULT_CONCURRENCY = 8


@dataclass
class BatchOptions:
    """Everything that decides a batch's results; stored with the experiment so it can resume."""

    flow: str
    data: str
    map_inputs: dict[str, str] = field(default_factory=dict)
    expect: dict[str, str] = field(default_factory=dict)
    metric: str | None = None
    """None: `exact` where an expected column exists, else no score."""
    judge: str | None = None
    rubric: str | None = None
    limit: int | None = None
    models: dict[str, str] = field(default_factory=dict)
    cache: bool = True
    """Serve repeated model calls from the LLM cache."""
    concurrency: int = DEFAULT_CONCURRENCY
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    version: str | None = None
    """The flow version the runs record (`NAME@REF`'s id, or the working files' content hash)."""
    warm_cascade: bool = False
    """Every `strategy: cascade` node asks its teacher alone, so its answers seed the node's memory."""

    def config(self, plan: Plan, dataset: Dataset) -> dict[str, Any]:
        """The experiment's config: the options with absolute paths, plus what they resolved to."""
        return {
            **asdict(self),
            "flow": str(Path(self.flow).resolve()),
            "data": str(Path(self.data).resolve()),
            "flow_hash": plan.flow.hash,
            "data_sha256": dataset.sha256,
            "inputs": dataset.inputs,
            "expected": dataset.expect,
            "examples": len(dataset.examples),
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> BatchOptions:
        """The options stored in an experiment's config (the resolved extras are dropped)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in config.items() if k in names})


def resumed_options(store: Store, experiment_id: str, given: BatchOptions | None) -> BatchOptions:
    """The stored options of an experiment to continue; `given` may only change how it runs."""
    experiment = store.get_experiment(experiment_id)
    if experiment is None or experiment.kind != KIND:
        raise InputError(f"no batch experiment {experiment_id!r} in the store", field="--resume")
    saved = BatchOptions.from_config(experiment.config)
    if given is None:
        return saved
    for name in ("map_inputs", "expect", "metric", "judge", "rubric", "limit", "models"):  # what decides results
        value = getattr(given, name)
        if value not in (None, {}) and value != getattr(saved, name):
            raise InputError(
                f"--resume continues the experiment as it started ({name} = {getattr(saved, name)!r}); "
                "start a new batch to change it",
                field="--resume",
            )
    for name, path in (("flow", given.flow), ("data", given.data)):
        if path and Path(path).resolve() != Path(getattr(saved, name)):
            saved_path = getattr(saved, name)
            raise InputError(f"experiment {experiment_id} ran {saved_path}, not {path}", field="--resume")
    saved.concurrency, saved.executor, saved.ray_address = given.concurrency, given.executor, given.ray_address
    saved.cache = given.cache
    return saved


def check_unchanged(store: Store, experiment_id: str, plan: Plan, dataset: Dataset) -> None:
    """Refuse to mix results of an edited flow or dataset into an experiment."""
    experiment = store.get_experiment(experiment_id)
    assert experiment is not None
    config = experiment.config
    if config.get("flow_hash") != plan.flow.hash:
        raise InputError("the flow changed since the experiment started", file=plan.flow.file, field="--resume")
    if config.get("data_sha256") != dataset.sha256:
        raise InputError("the dataset changed since the experiment started", file=str(dataset.path), field="--resume")
