"""Installed entry points by group: node types, tools and metrics all register this way."""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points

NODES = "flowstudio.nodes"
"""The entry-point group of node types (registry key → `Node` subclass)."""


@cache
def plugins(group: str) -> dict[str, EntryPoint]:
    """The entry points of `group` by name, read once per process."""
    return {ep.name: ep for ep in entry_points(group=group)}
