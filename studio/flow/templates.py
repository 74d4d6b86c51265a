"""Jinja2, sandboxed: prompt templates and `when:` guards.

Flow text is data; it is never handed to `eval` or `exec`. Templates and expressions run in
Jinja2's immutable sandbox with StrictUndefined and a cap on the rendered size.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, meta, nodes
from jinja2.exceptions import SecurityError, UndefinedError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from studio.errors import TemplateError

MAX_RENDERED_CHARS = 200_000

_ENV = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
"""Jinja's defaults otherwise: a single trailing newline of a template is dropped, so a `prompt: |`
block sends no stray newline."""


@lru_cache(maxsize=4096)
def variables(source: str) -> frozenset[str]:
    """Names a template reads from its context; raises TemplateSyntaxError (parsed once per source)."""
    return frozenset(meta.find_undeclared_variables(_ENV.parse(source)))


def expression_names(expression: str) -> set[str]:
    """Top-level names an expression reads (node ids, `inputs`); raises TemplateSyntaxError."""
    tree = _ENV.parse("{{ (" + expression + ") }}")
    return {n.name for n in tree.find_all(nodes.Name) if n.ctx == "load"}


def expression_reads(expression: str) -> list[tuple[str, str | None]]:
    """What an expression reads, in order: `(name, attribute)` for `name.attribute` and
    `name['attribute']`, `(name, None)` for a bare name. Raises TemplateSyntaxError."""
    tree = _ENV.parse("{{ (" + expression + ") }}")
    _ENV.compile_expression(expression)
    reads: list[tuple[str, str | None]] = []
    owned: set[int] = set()
    for item in tree.find_all((nodes.Getattr, nodes.Getitem)):
        target = getattr(item, "node", None)
        if not (isinstance(target, nodes.Name) and target.ctx == "load"):
            continue
        key = getattr(item, "arg", None)
        if isinstance(item, nodes.Getattr):
            reads.append((target.name, item.attr))
        elif isinstance(key, nodes.Const) and isinstance(key.value, str):
            reads.append((target.name, key.value))
        else:
            reads.append((target.name, None))
        owned.add(id(target))
    for name in tree.find_all(nodes.Name):
        if name.ctx == "load" and id(name) not in owned:
            reads.append((name.name, None))
    return reads


def expression_problem(expression: str, scope: Mapping[str, Collection[str] | None]) -> str | None:
    """Why `expression` cannot run in `scope` (name → the attributes it has, None for any), or None.

    Every name and every `name.attribute` it reads must exist: a typo is caught before a run.
    """
    try:
        reads = expression_reads(expression)
    except TemplateSyntaxError as err:
        return f"invalid expression: {err.message}"
    for name, attribute in reads:
        if name not in scope:
            return f"reads {name!r}, which is not defined here{_hint(name, scope)}; it can read {sorted(scope)}"
        known = scope[name]
        if attribute is not None and known is not None and attribute not in known:
            return f"reads {name}.{attribute}: {name!r} has no {attribute!r}{_hint(attribute, known)}; it has {sorted(known)}"
    return None


def _hint(word: str, choices: Collection[str]) -> str:
    close = difflib.get_close_matches(word, sorted(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_syntax(source: str) -> None:
    """Raise TemplateSyntaxError when `source` is not a valid template."""
    _ENV.parse(source)


@lru_cache(maxsize=512)
def _template(source: str) -> Any:
    return _ENV.from_string(source)


@lru_cache(maxsize=512)
def _expression(source: str) -> Any:
    return _ENV.compile_expression(source, undefined_to_none=False)


def render(source: str, context: dict[str, Any]) -> str:
    """Render a template in the sandbox; every failure becomes a TemplateError."""
    try:
        chunks: list[str] = []
        size = 0
        for chunk in _template(source).generate(**context):
            size += len(chunk)
            if size > MAX_RENDERED_CHARS:
                raise TemplateError(f"rendered text exceeds {MAX_RENDERED_CHARS} characters")
            chunks.append(chunk)
        return "".join(chunks)
    except SecurityError as err:
        raise TemplateError(f"template tried to leave the sandbox: {err}") from None
    except UndefinedError as err:
        raise TemplateError(f"template variable is undefined: {err}") from None
    except TemplateSyntaxError as err:
        raise TemplateError(f"template syntax error on line {err.lineno}: {err.message}") from None
    except TemplateError:
        raise
    except Exception as err:
        raise TemplateError(f"template failed: {type(err).__name__}: {err}") from None


def evaluate(expression: str, context: dict[str, Any]) -> Any:
    """Evaluate a `when:` expression in the sandbox."""
    try:
        return _expression(expression)(**context)
    except SecurityError as err:
        raise TemplateError(f"expression tried to leave the sandbox: {err}") from None
    except Exception as err:
        raise TemplateError(f"expression {expression!r} failed: {type(err).__name__}: {err}") from None
