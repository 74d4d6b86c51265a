"""Safe YAML loading: caps on size, aliases, depth and nodes; YAML 1.2 scalars; line map.

Nothing here constructs Python objects from tags: only the core scalar types, lists and
string-keyed mappings come out, so opening a file never runs code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import BaseResolver
from yaml.scanner import Scanner

from studio.errors import LoadError

MAX_BYTES = 1024 * 1024
MAX_ALIASES = 100
MAX_DEPTH = 64
MAX_NODES = 100_000

PathKey = tuple[str | int, ...]

_CORE_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:seq",
    "tag:yaml.org,2002:map",
}


class _CoreResolver(BaseResolver):
    """YAML 1.2 core schema: `yes`/`no`/`on`/`off`, dates and `012` stay strings."""


_CoreResolver.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_CoreResolver.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]
)
_CoreResolver.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?(?:0|[1-9][0-9]*)|0x[0-9a-fA-F]+)$"),
    list("-+0123456789"),
)
_CoreResolver.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


try:  # libyaml scans and parses (about 8x faster on a 200-node flow); composing, with the caps, stays below
    from yaml._yaml import CParser as _Events
except ImportError:  # a PyYAML built without libyaml: the same events from the pure-Python classes

    class _Events(Reader, Scanner, Parser):  # type: ignore[no-redef]
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)


class _CappedLoader(Composer, _Events, SafeConstructor, _CoreResolver):
    """Composes a node graph (in Python, so every node passes here) while counting aliases and depth."""

    def __init__(self, stream: str) -> None:
        _Events.__init__(self, stream)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        _CoreResolver.__init__(self)
        self.aliases = 0
        self.depth = 0

    def _next_line(self) -> int | None:
        event = self.peek_event()
        mark = event.start_mark if event is not None else None
        return mark.line + 1 if mark is not None else None

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise LoadError(f"more than {MAX_ALIASES} aliases", line=self._next_line())
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise LoadError(f"nesting deeper than {MAX_DEPTH} levels", line=self._next_line())
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


@dataclass(frozen=True)
class Document:
    """A loaded YAML document and the line of every value in it."""

    data: Any
    lines: dict[PathKey, int]
    file: str

    def line_of(self, path: PathKey) -> int | None:
        """The line of `path`, or of its nearest ancestor that has one."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return None


class _Builder:
    """Turns composed nodes into plain data, refusing what is not plain data."""

    def __init__(self, loader: _CappedLoader) -> None:
        self.loader = loader
        self.lines: dict[PathKey, int] = {}
        self.count = 0

    def build(self, node: Node, path: PathKey) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise LoadError(f"more than {MAX_NODES} values (an alias bomb?)", line=_line(node))
        if node.tag not in _CORE_TAGS:
            raise LoadError(f"tag {node.tag!r} is not allowed; only plain YAML data is", line=_line(node))
        self.lines.setdefault(path, _line(node))
        if isinstance(node, MappingNode):
            return self._mapping(node, path)
        if isinstance(node, SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        assert isinstance(node, ScalarNode)
        return self.loader.construct_object(node, deep=True)

    def _mapping(self, node: MappingNode, path: PathKey) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.build(key_node, path)
            if not isinstance(key, str):
                raise LoadError(f"mapping key {key!r} must be a string", line=_line(key_node))
            if key in result:
                raise LoadError(f"duplicate key {key!r}", line=_line(key_node), field=_dotted((*path, key)))
            self.lines[(*path, key)] = _line(key_node)
            result[key] = self.build(value_node, (*path, key))
        return result


def _line(node: Node) -> int:
    return int(node.start_mark.line) + 1


def _dotted(path: PathKey) -> str:
    return ".".join(str(p) for p in path)


def _tab_indent(text: str, error_line: int | None) -> int | None:
    """The first line up to the error whose indentation holds a tab (a common cause of YAML errors)."""
    lines = text.splitlines()
    last = len(lines) if error_line is None else min(error_line, len(lines))
    for number in range(1, last + 1):
        line = lines[number - 1]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if "\t" in indent and line.strip():
            return number
    return None


def loads(text: str, file: str = "<string>") -> Document:
    """Parse one YAML document from `text` under the safety rules."""
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise LoadError(f"file is larger than {MAX_BYTES // 1024} KiB", file=file, line=1)
    loader = _CappedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise LoadError("the file is empty", file=file, line=1)
        builder = _Builder(loader)
        data = builder.build(node, ())
    except LoadError as err:
        err.file = file
        raise
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark else None
        tab = _tab_indent(text, line)
        if tab is not None:
            message = "a tab in the indentation; YAML indents with spaces only"
            raise LoadError(message, file=file, line=tab) from None
        raise LoadError(f"invalid YAML: {err.problem or err}", file=file, line=line) from None
    except yaml.YAMLError as err:
        raise LoadError(f"invalid YAML: {err}", file=file) from None
    finally:
        loader.dispose()
    return Document(data=data, lines=builder.lines, file=file)


def load_file(path: str | Path) -> Document:
    """Read and parse a flow file, counting its bytes while reading (never trusting `stat`)."""
    from studio.flow.paths import PathRefused, read_capped

    path = Path(path)
    try:
        data = read_capped(path, MAX_BYTES, "flow file")
    except PathRefused as err:
        too_large = f"file is larger than {MAX_BYTES // 1024} KiB"
        message = too_large if "larger than" in str(err) else f"cannot read the file: {err}"
        raise LoadError(message, file=repr(str(path))[1:-1], line=1) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise LoadError(f"file is not UTF-8: {err.reason}", file=str(path)) from None
    return loads(text, file=str(path))
