"""Published flow versions: content-addressed snapshots in the store, tags, `NAME@REF` references,
a semantic diff between two flows, and promotion of a tag on a batch score."""

from __future__ import annotations
