"""Sizes and shapes written in the source: integer literals, names bound once to them
(module constants such as `N = 64`) and their arithmetic, literal shapes (`(n, 3)`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.shapes import Shape

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Scope
    from jaxfuse_lint.model.view import ModelView


def _int_literal(e: cst.BaseExpression | None) -> int | None:
    if isinstance(e, cst.Integer):
        return int(e.value, 0)
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus) and isinstance(e.expression, cst.Integer):
        return -int(e.expression.value, 0)
    return None


def _literal_shape(e: cst.BaseExpression | None) -> Shape | None:
    if e is None:
        return None
    if isinstance(e, (cst.Tuple, cst.List)):
        dims = []
        for el in e.elements:
            if isinstance(el, cst.StarredElement):
                return None
            v = _int_literal(el.value)
            dims.append(v if v is not None and v >= 0 else None)
        return Shape.of_dims(dims)
    v = _int_literal(e)
    if v is not None:
        return Shape.of_dims([v if v >= 0 else None])
    return None


class LiteralSizes:
    """The integers and shapes an expression spells out (a base of ShapeAnalysis)."""

    model: "ModelView"

    def static_int(self, e: cst.BaseExpression | None, scope: "Scope", depth: int = 0) -> int | None:
        """An integer known from the source: a literal, a name bound once to one (`N = 64`),
        or simple arithmetic of those."""
        if e is None or depth > 8:
            return None
        v = _int_literal(e)
        if v is not None:
            return v
        if isinstance(e, cst.Name):
            found = self.model.bindings_at(e, scope)
            if found is None:
                return None
            owner, bindings = found
            if len(bindings) != 1 or bindings[0].kind not in ("assign", "annassign") or bindings[0].index is not None:
                return None
            return self.static_int(bindings[0].value, owner, depth + 1)
        if isinstance(e, cst.BinaryOperation):
            a, b = self.static_int(e.left, scope, depth + 1), self.static_int(e.right, scope, depth + 1)
            if a is None or b is None:
                return None
            op = e.operator
            if isinstance(op, cst.Add):
                return a + b
            if isinstance(op, cst.Subtract):
                return a - b
            if isinstance(op, cst.Multiply):
                return a * b
            if isinstance(op, cst.FloorDivide) and b != 0:
                return a // b
            if isinstance(op, cst.Power) and 0 <= b <= 64:
                return a ** b
        return None

    def literal_shape(self, e: cst.BaseExpression | None, scope: "Scope") -> Shape | None:
        """`(n, 3)`, `[N, N, N]` (N bound once to an integer), `64`."""
        if e is None:
            return None
        if isinstance(e, (cst.Tuple, cst.List)):
            dims = []
            for el in e.elements:
                if isinstance(el, cst.StarredElement):
                    return None
                v = self.static_int(el.value, scope)
                dims.append(v if v is not None and v >= 0 else None)
            return Shape.of_dims(dims)
        v = self.static_int(e, scope)
        if v is not None:
            return Shape.of_dims([v if v >= 0 else None])
        return _literal_shape(e)

    def _static_number(self, e: cst.BaseExpression, scope: "Scope") -> float | None:
        if isinstance(e, cst.Float):
            return float(e.value)
        if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus) and isinstance(e.expression, cst.Float):
            return -float(e.expression.value)
        return self.static_int(e, scope)
