"""The studio's History: a flow's published versions as rows, the working file's place among them,
and the semantic diff of any two (a version or the working file), as `flowstudio diff` computes it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.errors import FlowError
from studio.flow.spec import Flow, load_flow
from studio.store.versions import VersionRecord
from studio.versions.diff import diff_files, diff_flows
from studio.versions.history import VersionStore
from studio.versions.refs import cache_dir, materialise, short
from studio.versions.snapshot import take

WORKING = "working file"
"""What the diff pickers call the flow file as it is on disk."""


@dataclass(frozen=True)
class Side:
    """One side of a diff: a flow and the files it reads (path → sha256)."""

    label: str
    """`abc123def456 [prod]`, or `working file`."""
    flow: Flow
    files: dict[str, str]
    entry: str
    """The flow file's path among `files`."""


def version_label(row: dict[str, Any]) -> str:
    """A version as pickers show it: short id, tags, the note's start."""
    tags = f" [{', '.join(row['tags'])}]" if row["tags"] else ""
    note = f" · {row['note'][:40]}" if row.get("note") else ""
    return f"{short(row['version'])}{tags}{note}"


def scores(row: dict[str, Any]) -> str:
    """The batches run on a version, newest first: `exact 0.750 ±0.21 (4)`."""
    shown = []
    for batch in sorted(row["batches"], key=lambda b: b.get("created_at") or "", reverse=True):
        if batch.get("score") is None:
            continue
        ci = batch.get("score_ci")
        spread = f" ±{(ci[1] - ci[0]) / 2:.2f}" if ci else ""
        count = f" ({batch['examples']})" if batch.get("examples") else ""
        shown.append(f"{batch.get('metric') or 'score'} {batch['score']:.3f}{spread}{count}")
    return "; ".join(shown)


def table_rows(rows: list[dict[str, Any]], working: str | None) -> list[dict[str, Any]]:
    """`history()` rows for the versions table; `working`: the id the file on disk has now."""
    return [
        {
            "version": short(row["version"]),
            "tags": ", ".join(row["tags"]),
            "published": row["created_at"][:19].replace("T", " "),
            "by": row.get("author") or "",
            "note": row["note"] or "",
            "scores": scores(row),
            "files": row["files"],
            "on disk": "yes" if row["version"] == working else "",
        }
        for row in rows
    ]


def version_side(store: VersionStore, version: VersionRecord, label: str) -> Side:
    """A published version, materialised once beside the store (as `NAME@ID` runs it)."""
    flow = load_flow(materialise(store, version, cache_dir(store)))
    return Side(label, flow, dict(version.files), version.entry)


def working_side(path: Path) -> Side:
    """The flow file as it is on disk (FlowError when it does not load)."""
    snapshot = take(path)
    return Side(WORKING, load_flow(path), snapshot.digests, snapshot.entry)


def diff_sides(a: Side, b: Side) -> dict[str, Any]:
    """`flowstudio diff A B --json` for two sides: the flows' diff and the other files that differ."""
    result = diff_flows(a.flow, b.flow)
    files = diff_files(a.files, b.files)
    result["files"] = {key: [p for p in paths if p not in (a.entry, b.entry)] for key, paths in files.items()}
    return result


def version_text(store: VersionStore, version: VersionRecord) -> str:
    """The version's flow file, as it was published."""
    data = store.blob(version.files[version.entry])
    if data is None:
        raise LookupError(f"the store lacks {version.entry} of version {short(version.version_id)}")
    return data.decode("utf-8")


def other_files_changed(path: Path, version: VersionRecord) -> list[str]:
    """The files besides the flow file (sub-flows, scripts, documents) whose content in `version`
    differs from the working copy's (or that one side lacks)."""
    try:
        working = take(path)
    except (FlowError, OSError, UnicodeDecodeError):
        return []
    files = diff_files(version.files, working.digests)
    return sorted({p for paths in files.values() for p in paths} - {version.entry, working.entry})
