"""Jinja2, sandboxed: prompt templates and `when:` guards.

Flow text is data; it is never handed to `eval` or `exec`. Templates and expressions run in
Jinja2's immutable sandbox with StrictUndefined, a cap on the rendered size, and a budget:

- the arithmetic and string operators are intercepted, so nothing is folded at validate time
  (`'x' * 700000000` is not computed when a flow is compiled) and their results are capped
  at run time (sequence lengths, integer size, `**` exponents, `%` widths);
- every call's integer arguments and every format width are capped (`'x'.ljust(10**9)`);
- a render executes at most MAX_STEPS lines of template code (nested loops) and stops at its
  deadline: DEFAULT_RENDER_S, or sooner when the node's `timeout_s` ends first (the engine
  sets it with `time_limit`), so a template never blocks the event loop past it.
"""

from __future__ import annotations

import difflib
import functools
import operator
import re
import sys
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from types import FrameType
from typing import Any, TypeVar

from jinja2 import StrictUndefined, TemplateSyntaxError, meta, nodes
from jinja2.exceptions import SecurityError, UndefinedError
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment

from studio.errors import TemplateError

MAX_RENDERED_CHARS = 200_000
MAX_ITEMS = 200_000
"""Longest string or sequence an operator or call may produce, and largest integer argument."""
MAX_INT_BITS = 4096
"""Largest integer an operator may produce, in bits."""
MAX_STEPS = 1_000_000
"""Lines of template code one render may execute (loops included)."""
DEFAULT_RENDER_S = 5.0
"""Longest one render may take when the node sets no earlier `timeout_s`."""
_TEMPLATE_FILE = "<template>"
_WIDTH = re.compile(r"\d{6,}|\*")

_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("flowstudio_template_deadline", default=None)
"""When the node's `timeout_s` ends (monotonic clock), and the timeout itself."""
T = TypeVar("T")


class _BudgetedEnvironment(ImmutableSandboxedEnvironment):
    """The immutable sandbox with capped operators and calls."""

    intercepted_binops = frozenset({"*", "**", "+", "%", "//"})
    intercepted_unops = frozenset({"-"})

    def call_binop(self, context: Context, operator_name: str, left: Any, right: Any) -> Any:
        _check_binop(operator_name, left, right)
        result = _BINOPS[operator_name](left, right)
        _check_size(result, f"the result of {operator_name!r}")
        return result

    def call_unop(self, context: Context, operator_name: str, arg: Any) -> Any:
        return -arg

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            _check_argument(value)
        result = super().call(__context, __obj, *args, **kwargs)
        _check_size(result, "a call's result")
        return result

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        _check_format(value.__self__)
        return wrapped


_BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "*": operator.mul,
    "**": operator.pow,
    "+": operator.add,
    "%": operator.mod,
    "//": operator.floordiv,
}


def _length(value: Any) -> int | None:
    return len(value) if isinstance(value, (str, bytes, list, tuple)) else None


def _check_binop(name: str, left: Any, right: Any) -> None:
    """Refuse an operation whose result would be too large, before computing it."""
    ints = [v for v in (left, right) if isinstance(v, int) and not isinstance(v, bool)]
    if name == "*":
        sized = [n for n in (_length(left), _length(right)) if n is not None]
        if sized and len(ints) == 1 and sized[0] * max(ints[0], 0) > MAX_ITEMS:
            raise TemplateError(f"template budget: `*` would make {sized[0] * ints[0]} items (limit {MAX_ITEMS})")
        if len(ints) == 2 and left.bit_length() + right.bit_length() > MAX_INT_BITS:
            raise TemplateError(f"template budget: `*` result larger than {MAX_INT_BITS} bits")
    elif name == "**" and len(ints) == 2:
        if right > 0 and max(abs(left), 2).bit_length() * right > MAX_INT_BITS:
            raise TemplateError(f"template budget: `**` result larger than {MAX_INT_BITS} bits")
    elif name == "+":
        sized = [n for n in (_length(left), _length(right)) if n is not None]
        if len(sized) == 2 and sum(sized) > MAX_ITEMS:
            raise TemplateError(f"template budget: `+` would make {sum(sized)} items (limit {MAX_ITEMS})")
    elif name == "%" and isinstance(left, str):
        _check_format(left)


def _check_format(text: str) -> None:
    for spec in re.findall(r"%(?:\([^)]*\))?[-#0 +]*[\d*.]*[a-zA-Z%]|\{[^{}]*:[^{}]*\}", text):
        if _WIDTH.search(spec):
            raise TemplateError(f"template budget: format width in {spec!r} is too large (or `*`)")


def _check_argument(value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_ITEMS:
        raise TemplateError(f"template budget: call argument {value} is larger than {MAX_ITEMS}")


def _check_size(value: Any, what: str) -> None:
    size = _length(value)
    if size is not None and size > MAX_ITEMS:
        raise TemplateError(f"template budget: {what} has {size} items (limit {MAX_ITEMS})")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise TemplateError(f"template budget: {what} is larger than {MAX_INT_BITS} bits")


class _Budget:
    """Counts lines of template code and watches the clock, from a trace function."""

    def __init__(self, end: float, seconds: float) -> None:
        self.seconds = seconds
        self.end = end
        self.steps = 0

    def enter(self, frame: FrameType, event: str, arg: Any) -> Any:
        return self.line if frame.f_code.co_filename == _TEMPLATE_FILE else None

    def line(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise TemplateError(f"template budget: more than {MAX_STEPS} steps (loops too large)")
            if self.steps % 256 == 0 and time.monotonic() > self.end:
                raise TemplateError(f"template budget: rendering took longer than {self.seconds:g} s")
        return self.line


def _budgeted(work: Callable[[], T]) -> T:
    """Run `work` (a render) under the step budget and the deadline."""
    end, seconds = time.monotonic() + DEFAULT_RENDER_S, DEFAULT_RENDER_S
    deadline = _DEADLINE.get()
    if deadline is not None and deadline[0] < end:
        end, seconds = deadline
    budget = _Budget(end, seconds)
    previous = sys.gettrace()
    sys.settrace(budget.enter)
    try:
        return work()
    finally:
        sys.settrace(previous)


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Within: renders stop once `seconds` from now have passed (a node's `timeout_s`)."""
    token = _DEADLINE.set(None if seconds is None else (time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _capped_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """A filter with the call checks (filters are called directly, not through `call`)."""

    @functools.wraps(function)
    def capped(*args: Any, **kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            _check_argument(value)
        if name == "format" and args and isinstance(args[0], str):
            _check_format(args[0])
        if name == "replace" and len(args) >= 3 and all(isinstance(a, str) for a in args[-3:]):
            text, old, new = (str(a) for a in args[-3:])
            grown = len(text) + (text.count(old) if old else len(text) + 1) * (len(new) - len(old))
            if grown > MAX_ITEMS:
                raise TemplateError(f"template budget: `replace` would make {grown} characters (limit {MAX_ITEMS})")
        result = function(*args, **kwargs)
        _check_size(result, f"the `{name}` filter's result")
        return result

    return capped


_ENV = _BudgetedEnvironment(undefined=StrictUndefined, autoescape=False)
"""Jinja's defaults otherwise: a single trailing newline of a template is dropped, so a `prompt: |`
block sends no stray newline."""
_ENV.filters = {name: _capped_filter(name, function) for name, function in _ENV.filters.items()}


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


@lru_cache(maxsize=4096)
def check_syntax(source: str) -> None:
    """Raise TemplateSyntaxError when `source` is not a valid template (a valid one is remembered:
    the editor checks a flow's every template after each edit)."""
    _ENV.parse(source)


@lru_cache(maxsize=512)
def _template(source: str) -> Any:
    return _ENV.from_string(source)


@lru_cache(maxsize=512)
def _expression(source: str) -> Any:
    return _ENV.compile_expression(source, undefined_to_none=False)


@lru_cache(maxsize=512)
def _plain(source: str) -> tuple[tuple[bool, str], ...] | None:
    """A template made only of text and bare `{{ name }}`s, as (is a name, text or name) pieces;
    None for any other. Such a template reads no attribute and calls nothing, so it needs neither
    the sandbox nor the budget: `render` joins its pieces (what Jinja2 would make of them)."""
    pieces: list[tuple[bool, str]] = []
    for node in _ENV.parse(source).body:
        if not isinstance(node, nodes.Output):
            return None
        for child in node.nodes:
            if isinstance(child, nodes.TemplateData):
                pieces.append((False, child.data))
            elif isinstance(child, nodes.Name) and child.ctx == "load":
                pieces.append((True, child.name))
            else:
                return None
    return tuple(pieces)


def _joined(pieces: tuple[tuple[bool, str], ...], context: dict[str, Any]) -> str | None:
    """A plain template's text, or None when a name is not in `context` (Jinja2 says what it is)."""
    parts: list[str] = []
    for is_name, text in pieces:
        if not is_name:
            parts.append(text)
        elif text in context:
            value = context[text]
            parts.append(value if isinstance(value, str) else str(value))
        else:
            return None
    joined = "".join(parts)
    if len(joined) > MAX_RENDERED_CHARS:
        raise TemplateError(f"rendered text exceeds {MAX_RENDERED_CHARS} characters")
    return joined


def render(source: str, context: dict[str, Any]) -> str:
    """Render a template in the sandbox, under the budget; every failure becomes a TemplateError."""
    try:
        pieces = _plain(source)
        joined = _joined(pieces, context) if pieces is not None else None
        if joined is not None:
            return joined
        template = _template(source)

        def work() -> str:
            chunks: list[str] = []
            size = 0
            for chunk in template.generate(**context):
                size += len(chunk)
                if size > MAX_RENDERED_CHARS:
                    raise TemplateError(f"rendered text exceeds {MAX_RENDERED_CHARS} characters")
                chunks.append(chunk)
            return "".join(chunks)

        return _budgeted(work)
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
    """Evaluate a `when:` expression in the sandbox, under the budget."""
    try:
        compiled = _expression(expression)
        return _budgeted(lambda: compiled(**context))
    except TemplateError:
        raise
    except SecurityError as err:
        raise TemplateError(f"expression tried to leave the sandbox: {err}") from None
    except Exception as err:
        raise TemplateError(f"expression {expression!r} failed: {type(err).__name__}: {err}") from None
