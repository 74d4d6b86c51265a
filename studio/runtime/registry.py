"""Node types by registry key, discovered through the `flowstudio.nodes` entry-point group."""

from __future__ import annotations

import difflib
from functools import cache

from studio.node import Node
from studio.plugins import plugins

GROUP = "flowstudio.nodes"
_extra: dict[str, type[Node]] = {}


def keys() -> list[str]:
    """Every registered node type key, sorted."""
    return sorted(set(plugins(GROUP)) | set(_extra))


def register(key: str, node_type: type[Node]) -> None:
    """Register a node type in this process (tests, notebooks); entry points are the normal way."""
    _extra[key] = node_type


@cache
def _load(key: str) -> type[Node]:
    node_type = plugins(GROUP)[key].load()
    if not (isinstance(node_type, type) and issubclass(node_type, Node)):
        raise TypeError(f"entry point {key!r} does not name a Node subclass")
    return node_type


def get(key: str) -> type[Node] | None:
    """The node type for `key`, or None when nothing is registered under it."""
    if key in _extra:
        return _extra[key]
    if key in plugins(GROUP):
        return _load(key)
    return None


def suggest(key: str) -> str | None:
    """The registered key closest to a misspelt one."""
    close = difflib.get_close_matches(key, keys(), n=1, cutoff=0.5)
    return close[0] if close else None
