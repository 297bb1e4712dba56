"""Building expression nodes for a fix, and parenthesizing them only where the place they take
needs it (operator precedence, the parent's context)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from jaxfuse_lint.model import SemanticModel


def dotted_expr(dotted: str) -> cst.BaseExpression:
    parts = dotted.split(".")
    node: cst.BaseExpression = cst.Name(parts[0])
    for p in parts[1:]:
        node = cst.Attribute(node, cst.Name(p))
    return node


_ATOMS = (cst.Name, cst.Attribute, cst.Subscript, cst.Call, cst.Integer, cst.Float, cst.Imaginary,
          cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.List, cst.Tuple, cst.Dict,
          cst.Set, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Ellipsis)


def is_atom(e: cst.BaseExpression) -> bool:
    """Binds at least as tightly as a subscript or call (no parentheses needed to index it)."""
    if e.lpar:
        return True
    if isinstance(e, cst.Tuple):
        return False  # an unparenthesized tuple (`a, b`)
    if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary)):
        return False  # `2[0]` / `2.real` parse differently; parenthesize numbers
    return isinstance(e, _ATOMS)


def paren(e: cst.BaseExpression) -> cst.BaseExpression:
    if e.lpar:
        return e
    return e.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def atom(e: cst.BaseExpression) -> cst.BaseExpression:
    return e if is_atom(e) else paren(e)


def call(func: cst.BaseExpression, *args: cst.BaseExpression) -> cst.Call:
    return cst.Call(func, [cst.Arg(a) for a in args])


def binop(left: cst.BaseExpression, op: cst.BaseBinaryOp, right: cst.BaseExpression) -> cst.BinaryOperation:
    return cst.BinaryOperation(left, op, right)


# Contexts in which an expression needs no parentheses of its own.
def fits_without_parens(model: "SemanticModel", node: cst.CSTNode) -> bool:
    parent = model.parent(node)
    if isinstance(parent, (cst.Arg, cst.Element, cst.Return, cst.Expr, cst.Index, cst.DictElement,
                           cst.Param, cst.Yield, cst.Annotation, cst.AssignTarget)):
        return True
    if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr)):
        return getattr(parent, "value", None) is node
    if isinstance(parent, cst.Lambda):
        return parent.body is node
    if isinstance(parent, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return parent.elt is node
    return False


# Operator precedence (higher binds tighter) for deciding where parentheses are needed.
PRECEDENCE = {
    cst.Power: 8, cst.Multiply: 6, cst.Divide: 6, cst.FloorDivide: 6, cst.Modulo: 6, cst.MatrixMultiply: 6,
    cst.Add: 5, cst.Subtract: 5, cst.LeftShift: 4, cst.RightShift: 4, cst.BitAnd: 3, cst.BitXor: 2, cst.BitOr: 1,
}
UNARY_PRECEDENCE = 7


def precedence(e: cst.BaseExpression) -> int:
    if e.lpar or is_atom(e):
        return 100
    if isinstance(e, cst.BinaryOperation):
        return PRECEDENCE.get(type(e.operator), 0)
    if isinstance(e, cst.UnaryOperation):
        return UNARY_PRECEDENCE if not isinstance(e.operator, cst.Not) else 0
    if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary)):
        return 100
    return 0


def in_context(model: "SemanticModel", original: cst.CSTNode, new: cst.BaseExpression) -> cst.BaseExpression:
    """`new`, parenthesized if it is to take `original`'s place in a tighter-binding context."""
    if is_atom(new) or fits_without_parens(model, original):
        return new
    parent = model.parent(original)
    p_new = precedence(new)
    if isinstance(parent, cst.BinaryOperation) and not original.lpar:
        p_parent = PRECEDENCE.get(type(parent.operator), 0)
        power = isinstance(parent.operator, cst.Power)
        if parent.left is original:
            ok = p_new > p_parent or (p_new == p_parent and not power)
        else:
            ok = p_new > p_parent or (p_new == p_parent and power)
        if ok:
            return new
    if isinstance(parent, cst.IfExp) and not original.lpar and p_new > 0:
        return new  # arithmetic binds tighter than `a if c else b`
    if (isinstance(parent, cst.UnaryOperation) and p_new >= UNARY_PRECEDENCE
            and not isinstance(new, cst.BinaryOperation)):
        return new
    if original.lpar:
        return new.with_changes(lpar=original.lpar, rpar=original.rpar)
    return paren(new)
