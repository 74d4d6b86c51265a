"""Promotion: move a tag to a candidate version only when a batch scores it no worse than the
version the tag points at now (the LLM cache makes the second batch of a known version free)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from studio.errors import InputError
from studio.evaluate.batch import batch
from studio.evaluate.options import BatchOptions
from studio.store.base import Store
from studio.store.versions import VersionRecord
from studio.versions.history import VersionStore, check_tag
from studio.versions.refs import materialise, short


class RunsAndVersions(Store, VersionStore, Protocol):
    """A store that keeps runs, experiments and versions (both stores do)."""


@dataclass(frozen=True)
class Score:
    """One version's batch result."""

    version: str
    """The version id."""
    experiment: str
    """The batch's experiment id."""
    score: float
    """Mean score."""
    interval: tuple[float, float] | None
    """95% interval of the mean; None when the batch gave none."""

    def as_json(self) -> dict[str, Any]:
        """For `promote --json`."""
        interval = list(self.interval) if self.interval else None
        return {"version": self.version, "experiment": self.experiment, "score": self.score, "interval": interval}


@dataclass(frozen=True)
class Promotion:
    """What `promote` decided."""

    promoted: bool
    tag: str
    candidate: Score
    current: Score | None
    """The tagged version's score; None when the tag pointed nowhere (or at the candidate)."""
    reason: str
    """Why, in one line."""

    def as_json(self) -> dict[str, Any]:
        """For `promote --json`."""
        current = self.current.as_json() if self.current else None
        return {"promoted": self.promoted, "tag": self.tag, "reason": self.reason,
                "candidate": self.candidate.as_json(), "current": current}  # fmt: skip


async def promote(
    store: RunsAndVersions,
    candidate: VersionRecord,
    *,
    tag: str,
    options: BatchOptions,
    cache: Path,
    min_delta: float | None = None,
) -> Promotion:
    """Run `options`' batch on the candidate and on the version `tag` points at; move the tag when
    the candidate is not worse (by more than `min_delta`, else than its score's interval)."""
    check_tag(tag)
    current_id = next((t.version_id for t in store.list_tags(candidate.flow) if t.tag == tag), None)
    new = await _score(store, candidate, options, cache)
    current = None
    if current_id is not None and current_id != candidate.version_id:
        version = store.get_version(current_id)
        current = await _score(store, version, options, cache)
    promoted, reason = _decide(new, current, min_delta)
    if promoted:
        store.set_tag(candidate.flow, tag, candidate.version_id)
    return Promotion(promoted, tag, new, current, reason)


def _decide(new: Score, current: Score | None, min_delta: float | None) -> tuple[bool, str]:
    if current is None:
        return True, "nothing to compare with: the tag pointed nowhere, or at the candidate already"
    if min_delta is not None:
        allowed = current.score - min_delta
        margin = f"--min-delta {min_delta}"
    else:
        low, high = new.interval or (new.score, new.score)
        allowed = current.score - (high - low) / 2
        margin = "the candidate's 95% interval"
    if new.score + 1e-12 >= allowed:
        return True, f"{new.score:.3f} is not worse than {current.score:.3f} beyond {margin}"
    return False, f"{new.score:.3f} is worse than {current.score:.3f} beyond {margin}"


async def _score(store: RunsAndVersions, version: VersionRecord | None, options: BatchOptions, cache: Path) -> Score:
    assert version is not None
    flow = materialise(store, version, cache)
    result = await batch(replace(options, flow=str(flow), version=version.version_id), store)
    summary = result.summary
    if summary.score is None:
        raise InputError("promote needs a score: give --expect OUT=COL (and --metric)", field="--expect")
    interval = (summary.score_ci[0], summary.score_ci[1]) if summary.score_ci else None
    return Score(short(version.version_id), result.experiment_id, summary.score, interval)
