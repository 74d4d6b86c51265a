"""Optional template variables: a variable read through Jinja's `default` filter may be left unwired.

`{{ tone | default('neutral') }}` makes `tone` an optional input of its node. An optional
variable that is unwired, or whose wire comes from a skipped node (null), renders as
`MISSING`: the `default` filter then applies, and a bare `{{ tone }}` renders as "".
"""

from __future__ import annotations

from functools import lru_cache

from jinja2 import Environment, Undefined, nodes

DEFAULT_FILTERS = frozenset({"default", "d"})

_PARSER = Environment()


class _Missing(Undefined):
    """A lenient undefined: renders as "", is false, and lets `default` apply."""

    __slots__ = ()


MISSING = _Missing(name="optional variable")


@lru_cache(maxsize=4096)
def optional_variables(source: str) -> frozenset[str]:
    """Names `source` reads through a `default` filter (`{{ x | default('') }}`); raises TemplateSyntaxError."""
    tree = _PARSER.parse(source)
    return frozenset(
        f.node.name
        for f in tree.find_all(nodes.Filter)
        if f.name in DEFAULT_FILTERS and isinstance(f.node, nodes.Name) and f.node.ctx == "load"
    )
