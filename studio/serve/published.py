"""Serving published versions: `serve --published` and `/flows/NAME@TAG/runs`.

With `published`, a flow name serves the version its `prod` tag points at (else its newest
published version), looked up on every request: editing the file on disk changes nothing served
until a publish or a tag move, and a moved tag takes effect for the next run (runs in flight
finish on the plan they started with). `NAME@TAG` and `NAME@ID` name one version in either mode.
A version's files are materialised once, read-only, beside the store (`studio.versions.refs`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import cast

from studio.errors import FlowError
from studio.serve.catalog import Catalog, NotFound, ServedFlow
from studio.store import open_store
from studio.store.versions import VersionRecord
from studio.versions import refs
from studio.versions.promote import RunsAndVersions

SERVED_TAG = "prod"
"""The tag `--published` serves; a flow without it serves its newest version."""


class VersionedCatalog(Catalog):
    """A catalog that also serves published versions, read from the store at `db`."""

    def __init__(
        self, path: str | Path, allow_models: Iterable[str] = (), *, db: str | Path, published: bool = False
    ) -> None:
        super().__init__(path, allow_models)
        self.db = db
        self.published = published
        """Serve each flow's `prod` (else newest) version instead of its working file."""
        self._store: RunsAndVersions | None = None

    @property
    def store(self) -> RunsAndVersions:
        """The store the versions are read from (opened on first use)."""
        if self._store is None:
            self._store = cast(RunsAndVersions, open_store(self.db, group_commit=False))
        return self._store

    def flows(self) -> dict[str, ServedFlow]:
        """The working files' flows; with `published`, each one's served version instead (a flow
        never published is not served)."""
        working = super().flows()
        if not self.published:
            return working
        found = {}
        for name in working:
            version = self._served_version(name)
            if version is not None:
                found[name] = self._version(version)
        return found

    def get(self, name: str) -> ServedFlow:
        """The flow called `name`, or the version `NAME@TAG` / `NAME@ID` names."""
        reference = refs.parse(name)
        if reference is not None:
            try:
                return self._version(refs.resolve(self.store, reference))
            except FlowError as err:
                raise NotFound(err.message) from None
        if not self.published:
            return super().get(name)
        version = self._served_version(name)
        if version is None:
            raise NotFound(f"flow {name!r} has no published version; flows: {sorted(self.flows())}")
        return self._version(version)

    def close(self) -> None:
        """Close the store connection, if one was opened."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def _served_version(self, name: str) -> VersionRecord | None:
        tagged = next((t.version_id for t in self.store.list_tags(name) if t.tag == SERVED_TAG), None)
        if tagged is not None:
            return self.store.get_version(tagged)
        newest = self.store.list_versions(name)
        return newest[0] if newest else None

    def _version(self, version: VersionRecord) -> ServedFlow:
        path = refs.materialise(self.store, version, refs.cache_dir(self.store))
        served = self._load(path)
        if served is None:
            raise NotFound(f"version {refs.short(version.version_id)} of {version.flow!r} does not load here")
        return dataclasses.replace(served, version=version.version_id)
