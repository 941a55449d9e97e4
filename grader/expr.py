"""Safe evaluation of the small arithmetic expressions that specs use.

Specs write FLOP and byte counts (``"3 * n * 4"``), dimension constraints
(``"rows * cols <= 2**26"``) and tolerances (``"eps * sqrt(n) * abs_sum(x)"``)
as strings. They are parsed once with :mod:`ast` and evaluated against a dict
of names; only arithmetic, comparisons, ``and``/``or``/``not`` and the
functions in :data:`FUNCTIONS` (plus those the caller passes) are allowed, so a
spec can never run arbitrary code.
"""
from __future__ import annotations

import ast
import math
import operator
from typing import Any, Callable, Mapping

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "log2": math.log2,
    "ceil": math.ceil,
    "floor": math.floor,
    "min": min,
    "max": max,
    "abs": abs,
}

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CMPOPS = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
    ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
}


MAX_EXPONENT = 1024   # the largest exponent of ** an expression may use (2**40 and the like are fine)


class ExprError(ValueError):
    """An expression is malformed or uses a name or construct that is not allowed."""


class Expr:
    """A parsed expression; ``Expr("2*n").names`` is ``{"n"}``.

    Raises:
        ExprError: on a syntax error or a disallowed construct (attribute access,
            subscripts, lambdas, ...).
    """

    def __init__(self, source: str):
        self.source = source
        try:
            self._tree = ast.parse(source, mode="eval").body
        except SyntaxError as exc:
            raise ExprError(f"cannot parse {source!r}: {exc.msg}") from None
        except (RecursionError, MemoryError):   # thousands of nested operators
            raise ExprError(f"cannot parse {source[:60]!r}...: nested too deeply") from None
        self.names: frozenset[str] = frozenset()
        self.calls: frozenset[str] = frozenset()
        names, calls = set(), set()
        for node in ast.walk(self._tree):
            if isinstance(node, ast.Call):
                if not isinstance(node.func, ast.Name) or node.keywords:
                    raise ExprError(f"{source!r}: only plain calls like sqrt(n) are allowed")
                calls.add(node.func.id)
            elif isinstance(node, ast.Name):
                names.add(node.id)
            elif not isinstance(node, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare,
                                       ast.BoolOp, ast.operator, ast.unaryop, ast.cmpop,
                                       ast.boolop, ast.Load, ast.expr_context)):
                raise ExprError(f"{source!r}: {type(node).__name__} is not allowed")
        self.calls = frozenset(calls)
        self.names = frozenset(names - calls)

    def __repr__(self) -> str:
        return f"Expr({self.source!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expr) and other.source == self.source

    def __hash__(self) -> int:
        return hash(self.source)

    def evaluate(self, env: Mapping[str, Any],
                 functions: Mapping[str, Callable[..., Any]] | None = None) -> Any:
        """Evaluate with ``env`` for names; raises ExprError for an unknown name."""
        funcs = {**FUNCTIONS, **(functions or {})}
        return _eval(self._tree, env, funcs, self.source)


def _eval(node: ast.AST, env: Mapping[str, Any], funcs: Mapping[str, Callable], src: str) -> Any:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        raise ExprError(f"{src!r}: constant {node.value!r} is not a number")
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise ExprError(f"{src!r}: unknown name {node.id!r} (known: {', '.join(sorted(env))})")
        return env[node.id]
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env, funcs, src), _eval(node.right, env, funcs, src)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:   # 9**9**9 would run for minutes
            raise ExprError(f"{src!r}: an exponent of {right} is beyond {MAX_EXPONENT}")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        val = _eval(node.operand, env, funcs, src)
        if isinstance(node.op, ast.USub):
            return -val
        if isinstance(node.op, ast.UAdd):
            return +val
        if isinstance(node.op, ast.Not):
            return not val
        raise ExprError(f"{src!r}: operator not allowed")
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env, funcs, src)
        for op, comp in zip(node.ops, node.comparators):
            if type(op) not in _CMPOPS:
                raise ExprError(f"{src!r}: comparison {type(op).__name__} not allowed")
            right = _eval(comp, env, funcs, src)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        values = (_eval(v, env, funcs, src) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Call):
        name = node.func.id  # type: ignore[attr-defined]
        if name not in funcs:
            raise ExprError(f"{src!r}: unknown function {name!r} (known: {', '.join(sorted(funcs))})")
        return funcs[name](*(_eval(a, env, funcs, src) for a in node.args))
    raise ExprError(f"{src!r}: {type(node).__name__} is not allowed")
