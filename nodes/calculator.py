"""The built-in `calculator` tool (entry point group `flowstudio.tools`): safe arithmetic.

The expression is parsed with `ast` and only numbers and arithmetic operators are
evaluated, so it never runs code. Small models write `12 x 7` or `3 \u00d7 4 =`; those read fine.
Exponents are bounded, and so is every intermediate result (MAX_BITS), so a chain such as
`((10**100)**100)**100` is refused before it is computed.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable

MAX_CHARS = 200
MAX_EXPONENT = 100
MAX_BITS = 4096
_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_WORDS = [(r"(?<=[\d)\s])[x\u00d7]\s*(?=[\d(])", "*"), (r"\u00f7", "/"), (r"\^", "**"), (r"(?<=\d),(?=\d{3})", "")]


def calculator(expression: str) -> int | float:
    """Evaluate an arithmetic expression such as 12 * (3 + 4) / 2."""
    text = expression.strip().rstrip("=?. ").strip()
    for pattern, replacement in _WORDS:
        text = re.sub(pattern, replacement, text)
    if len(text) > MAX_CHARS:
        raise ValueError(f"expression longer than {MAX_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ValueError(f"not an arithmetic expression: {expression!r}") from None
    try:
        value = _evaluate(tree.body)
    except (ZeroDivisionError, OverflowError) as err:
        raise ValueError(f"cannot compute {expression!r}: {err}") from None
    return int(value) if isinstance(value, float) and value.is_integer() and abs(value) < 1e15 else value


def _evaluate(node: ast.expr) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ValueError(f"exponent larger than {MAX_EXPONENT}")
        if isinstance(node.op, ast.Pow) and _bits(left) * abs(right) > MAX_BITS:
            raise ValueError(f"result larger than {MAX_BITS} bits")
        if isinstance(node.op, ast.Mult) and _bits(left) + _bits(right) > MAX_BITS:
            raise ValueError(f"result larger than {MAX_BITS} bits")
        return _BINARY[type(node.op)](left, right)
    raise ValueError(f"only numbers and + - * / // % ** are allowed, not {ast.unparse(node)!r}")


def _bits(value: float) -> int:
    """Bits of an integer's magnitude (floats overflow on their own)."""
    return abs(value).bit_length() if isinstance(value, int) else 0
