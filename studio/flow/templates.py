"""Jinja2, sandboxed: prompt templates and `when:` guards.

Flow text is data; it is never handed to `eval` or `exec`. Templates and expressions run in
Jinja2's immutable sandbox with StrictUndefined and a cap on the rendered size.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, meta, nodes
from jinja2.exceptions import SecurityError, UndefinedError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from studio.errors import TemplateError

MAX_RENDERED_CHARS = 200_000

_ENV = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


@lru_cache(maxsize=4096)
def variables(source: str) -> frozenset[str]:
    """Names a template reads from its context; raises TemplateSyntaxError (parsed once per source)."""
    return frozenset(meta.find_undeclared_variables(_ENV.parse(source)))


def expression_names(expression: str) -> set[str]:
    """Top-level names an expression reads (node ids, `inputs`); raises TemplateSyntaxError."""
    tree = _ENV.parse("{{ (" + expression + ") }}")
    return {n.name for n in tree.find_all(nodes.Name) if n.ctx == "load"}


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
