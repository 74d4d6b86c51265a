"""A flow and every file it reads, as one content-addressed snapshot.

The files are those `flowstudio export` embeds (`studio.export.writer.flow_contents`): the flow,
its sub-flows (`flow.call`, `control.map`, `control.loop`, recursively), scripted-model scripts,
tool modules and the files or folders a node's config names (documents an index is built from).
The id is the sha256 over the sorted (path, sha256 of bytes) pairs and the flow's own path, so
the same content always gets the same id, and a change in any file a new one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from studio.errors import FlowError
from studio.export.writer import flow_contents
from studio.flow.spec import Flow, load_flow


@dataclass(frozen=True)
class Snapshot:
    """A flow's files as bytes, ready to be stored as a version."""

    flow: str
    """The flow's `name`."""
    entry: str
    """The flow file's path among `files` (POSIX, relative)."""
    files: dict[str, bytes]
    """Every file, by POSIX path relative to their common folder."""
    notes: tuple[str, ...] = ()
    """What the export walk said it left out (modules not beside the flow, ...)."""

    @property
    def digests(self) -> dict[str, str]:
        """Each file's sha256, by path."""
        return {path: digest(data) for path, data in sorted(self.files.items())}

    @property
    def version_id(self) -> str:
        """The content hash: 64 hex digits."""
        manifest = json.dumps({"entry": self.entry, "files": self.digests}, sort_keys=True)
        return digest(manifest.encode("utf-8"))


def digest(data: bytes) -> str:
    """sha256 of bytes, hex."""
    return hashlib.sha256(data).hexdigest()


def take(flow: str | Path | Flow) -> Snapshot:
    """The snapshot of a flow file as it is on disk now; FlowError when it is invalid."""
    loaded = flow if isinstance(flow, Flow) else load_flow(flow)
    entry, files, notes = flow_contents(loaded)
    return Snapshot(loaded.spec.name, entry, files, tuple(notes))


def working_id(flow: str | Path | Flow) -> str | None:
    """The version id the flow's working files have now (the flow and every file it reads), as
    `flowstudio run FILE` records it; None when the flow does not load or a file it reads is
    missing or unreadable (the caller's own loading says why)."""
    try:
        return take(flow).version_id
    except (FlowError, OSError, UnicodeDecodeError):
        return None


def with_entry_name(snapshot: Snapshot, name: str) -> Snapshot:
    """The snapshot with its flow file renamed to `name` in the same folder (`flow.optimized.yaml`
    published as `flow.yaml`: a new version of the same file); unchanged when that path is taken."""
    entry = str(PurePosixPath(snapshot.entry).with_name(name))
    if entry == snapshot.entry or entry in snapshot.files:
        return snapshot
    files = {entry if path == snapshot.entry else path: data for path, data in snapshot.files.items()}
    return replace(snapshot, entry=entry, files=files)
