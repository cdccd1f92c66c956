"""Launch plans made concrete: size expressions evaluated for one shape.

Why a module of its own: the validator, the CPU emulator and the GPU executor
all need the same grid/block/argument numbers, computed the same way.
"""
from __future__ import annotations

import ast
import operator
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Mapping, Union

Number = Union[int, float]

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.Div: operator.truediv,
}
_CMPS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def cdiv(a: int, b: int) -> int:
    """Ceiling division, the usual grid-size helper."""
    return -(-a // b)


_FUNCS = {"cdiv": cdiv, "min": min, "max": max}


class ExprError(ValueError):
    pass


def evaluate(expr: Number | str, names: Mapping[str, Number]) -> Number:
    """Evaluate an integer expression over sizes, params and sm_count.

    Only arithmetic, comparisons, `and`, and the functions cdiv/min/max are
    allowed, so a manifest cannot run code.
    """
    if isinstance(expr, bool):
        raise ExprError(f"{expr!r} is a boolean, not a number")
    if isinstance(expr, (int, float)):
        return expr
    return _compiled(str(expr))(names)


Compiled = Callable[[Mapping[str, Number]], Number]


@lru_cache(maxsize=8192)
def _compiled(expr: str) -> Compiled:
    """Parse and check `expr` once; the result evaluates it for any names.

    Why: a family's plans are evaluated for every shape and SM count checked
    (hundreds of thousands of times in one catalog load), over a few hundred
    distinct expressions.
    """
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"cannot parse {expr!r}: {exc.msg}") from None

    def build(node: ast.AST) -> Compiled:
        if isinstance(node, ast.Expression):
            return build(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            value = node.value
            return lambda names: value
        if isinstance(node, ast.Name):
            ident = node.id

            def name(names: Mapping[str, Number]) -> Number:
                if ident not in names:
                    raise ExprError(f"unknown name {ident!r} in {expr!r}; known: {sorted(names)}")
                return names[ident]
            return name
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            op, left, right = _BINOPS[type(node.op)], build(node.left), build(node.right)
            return lambda names: op(left(names), right(names))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            operand = build(node.operand)
            return lambda names: -operand(names)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMPS:
            cmp, left, right = _CMPS[type(node.ops[0])], build(node.left), build(node.comparators[0])
            return lambda names: int(cmp(left(names), right(names)))
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            parts = [build(v) for v in node.values]
            return lambda names: int(all(p(names) for p in parts))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCS
            and not node.keywords
        ):
            fn, args = _FUNCS[node.func.id], [build(a) for a in node.args]
            return lambda names: fn(*(a(names) for a in args))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            raise ExprError(f"function {node.func.id!r} in {expr!r} is not allowed (only cdiv, min and max)")
        raise ExprError(f"{ast.unparse(node)!r} in {expr!r} is not allowed (use + - * // % cdiv min max)")

    return build(tree)


def evaluate_int(expr: Number | str, names: Mapping[str, Number]) -> int:
    value = evaluate(expr, names)
    if isinstance(value, float):
        if not value.is_integer():
            raise ExprError(f"{expr!r} evaluates to {value}, not an integer")
        value = int(value)
    return value


@dataclass(frozen=True)
class BufferArg:
    """A pointer argument: the named buffer."""

    name: str


@dataclass(frozen=True)
class ScalarArg:
    """A by-value argument with the C type the kernel declares."""

    name: str
    ctype: str
    value: Number


@dataclass(frozen=True)
class ResolvedLaunch:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    args: tuple[BufferArg | ScalarArg, ...]
    cooperative: bool = False

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


def dims3(values: tuple[int, ...]) -> tuple[int, int, int]:
    v = tuple(values) + (1,) * (3 - len(values))
    return (int(v[0]), int(v[1]), int(v[2]))
