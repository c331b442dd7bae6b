"""Expressions: the syntax tree's arithmetic as IR nodes, and their evaluation with units."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from effspec.diagnostics import Span
from effspec.front.ir import (
    BinOp,
    Expr,
    Neg,
    Number,
    Ref,
)
from effspec.front.units import (
    Q,
    parse_unit,
)

if TYPE_CHECKING:
    from effspec.front.syntax import Node


def to_expr(tree: Node) -> Expr:
    """Convert an expression subtree (depth already bounded)."""
    kind = getattr(tree, "data", None)
    span = Span.of(tree)
    if kind == "quantity":
        number, *unit = tree.children
        return Number(float(str(number).replace("_", "")), str(unit[0]) if unit and unit[0] is not None else "", str(number), span)
    if kind == "ref":
        return Ref(tuple(str(t) for t in tree.children[0].children), span)
    if kind in ("add", "sub", "mul", "div"):
        op = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[kind]
        return BinOp(op, to_expr(tree.children[0]), to_expr(tree.children[1]), span)
    if kind == "neg":
        return Neg(to_expr(tree.children[0]), span)
    raise ValueError(f"not an expression: {kind}")


def evaluate(expr: Expr, resolve: Callable[[Ref], Q]) -> Q:
    """Evaluate an expression; ``resolve(Ref) -> Q`` supplies references.

    Raises UnitError, ZeroDivisionError, or LookupError (from resolve).
    """
    if isinstance(expr, Number):
        if not expr.unit:
            return Q(expr.value)
        factor, dims = parse_unit(expr.unit)
        return Q(expr.value * factor, dims)
    if isinstance(expr, Ref):
        return resolve(expr)
    if isinstance(expr, Neg):
        return -evaluate(expr.operand, resolve)
    left, right = evaluate(expr.left, resolve), evaluate(expr.right, resolve)
    if expr.op == "+":
        return left + right
    if expr.op == "-":
        return left - right
    if expr.op == "*":
        return left * right
    return left / right


def refs_in(expr: Expr) -> list[Ref]:
    out: list[Ref] = []
    stack: list[Expr] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Ref):
            out.append(node)
        elif isinstance(node, BinOp):
            stack += [node.right, node.left]
        elif isinstance(node, Neg):
            stack.append(node.operand)
    return out
