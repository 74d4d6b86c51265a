"""`NAME@TAG` and `NAME@ID` (a unique beginning of the id): a published version named where a flow file is.

A reference is resolved against the store (a tag first, then an id prefix) and its snapshot is
written once to `.flowstudio/versions/ID/` beside the store, read-only from then on; runs read
the flow from there, so editing the working file changes nothing a reference runs.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from studio.errors import InputError
from studio.store import default_db_path
from studio.store.versions import VersionRecord
from studio.versions.history import VersionStore

REFERENCE = re.compile(r"(?P<flow>[a-z0-9][a-z0-9-]*)@(?P<ref>[A-Za-z0-9][A-Za-z0-9._-]*)")
"""`flow-name@tag-or-id`."""
MIN_PREFIX = 4
"""The shortest id beginning taken as an id."""


@dataclass(frozen=True)
class Reference:
    """A parsed `NAME@REF`."""

    flow: str
    """The flow's name."""
    ref: str
    """A tag, or the beginning of a version id."""

    def __str__(self) -> str:
        return f"{self.flow}@{self.ref}"


def parse(text: str) -> Reference | None:
    """The reference `text` is; None when it is not one (a file path, say) or a file by that name exists."""
    match = REFERENCE.fullmatch(text)
    if match is None or Path(text).exists():
        return None
    return Reference(match["flow"], match["ref"])


def resolve(store: VersionStore, reference: Reference) -> VersionRecord:
    """The version a reference names: its tag, else the one version whose id begins with it."""
    for tag in store.list_tags(reference.flow):
        if tag.tag == reference.ref:
            found = store.get_version(tag.version_id)
            assert found is not None, f"tag {reference} points at a missing version"
            return found
    versions = store.list_versions(reference.flow)
    if not versions:
        raise InputError(f"{reference}: flow {reference.flow!r} has no published version (flowstudio publish FILE)")
    ref = reference.ref.lower()
    matches = [v for v in versions if len(ref) >= MIN_PREFIX and v.version_id.startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    tags = ", ".join(t.tag for t in store.list_tags(reference.flow)) or "none"
    if not matches:
        raise InputError(
            f"{reference}: no tag or version id (at least {MIN_PREFIX} characters) of that name; tags: {tags}"
        )
    shown = ", ".join(v.version_id[:12] for v in matches[:3])
    raise InputError(f"{reference}: begins more than one version id ({shown}); give more characters")


def short(version_id: str) -> str:
    """The id as listings show it."""
    return version_id[:12]


def materialise(store: VersionStore, version: VersionRecord, cache: Path) -> Path:
    """Write the version's files to `cache/ID/` (once; atomic) and return its flow file's path there."""
    folder = cache / version.version_id
    if not folder.is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=cache, prefix=f".{version.version_id[:12]}-"))
        try:
            _write_files(store, version, staging)
            os.replace(staging, folder)
        except OSError:
            if not folder.is_dir():
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return folder / version.entry


def _write_files(store: VersionStore, version: VersionRecord, folder: Path) -> None:
    for relative, digest in version.files.items():
        target = (folder / relative).resolve()
        if not target.is_relative_to(folder.resolve()):
            raise InputError(f"version {short(version.version_id)}: file {relative!r} would leave its folder")
        data = store.blob(digest)
        if data is None:
            raise InputError(f"version {short(version.version_id)}: the store lacks file {relative} ({digest[:12]})")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o444)


def cache_dir(store: object) -> Path:
    """Where versions are materialised: `versions/` beside the store's file (a store on a server:
    beside the default store file, `.flowstudio/versions/`)."""
    path = getattr(store, "path", None)
    return (path if isinstance(path, Path) else default_db_path()).parent / "versions"


def flow_file(store: VersionStore, text: str) -> tuple[Path, str | None]:
    """The flow file `text` names, and its version id: a reference's materialised snapshot, or a path as given (None)."""
    reference = parse(text)
    if reference is None:
        return Path(text), None
    version = resolve(store, reference)
    return materialise(store, version, cache_dir(store)), version.version_id
