"""Node types by registry key, discovered through the `flowstudio.nodes` entry-point group."""

from __future__ import annotations

import difflib
from functools import cache

from studio.node import Node, Role
from studio.plugins import NODES, plugins

GROUP = NODES
BUILT_IN = "nodes"
"""The package of flowstudio's own node types."""
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


def with_role(role: Role) -> str:
    """The key of a node type that declares `role` (`Node.roles`): flowstudio's own first, then
    the others by key. Raises LookupError when none does."""
    found = [key for key in keys() if role in _type(key).roles]
    if not found:
        raise LookupError(f"no installed node type declares the role {role!r}")
    return min(found, key=lambda key: (_type(key).__module__.split(".")[0] != BUILT_IN, key))


def _type(key: str) -> type[Node]:
    found = get(key)
    assert found is not None
    return found
