"""Accumulating statements (`acc = acc + term`, `acc += term`, also with `-`) and the simple
statements of a loop body: what a Python accumulation loop is made of."""
from __future__ import annotations

from dataclasses import dataclass

import libcst as cst


@dataclass(eq=False)
class Accumulation:
    """`acc = acc + term`, `acc = term + acc`, `acc += term` (also with `-`)."""

    statement: cst.BaseSmallStatement
    name: str
    term: cst.BaseExpression


def accumulation(stmt: cst.BaseSmallStatement) -> Accumulation | None:
    if isinstance(stmt, cst.AugAssign) and isinstance(stmt.target, cst.Name) \
            and isinstance(stmt.operator, (cst.AddAssign, cst.SubtractAssign)):
        return Accumulation(stmt, stmt.target.value, stmt.value)
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name):
        name = stmt.targets[0].target.value
        v = stmt.value
        if isinstance(v, cst.BinaryOperation) and isinstance(v.operator, (cst.Add, cst.Subtract)):
            if isinstance(v.left, cst.Name) and v.left.value == name:
                return Accumulation(stmt, name, v.right)
            if isinstance(v.operator, cst.Add) and isinstance(v.right, cst.Name) and v.right.value == name:
                return Accumulation(stmt, name, v.left)
    return None


def small_statements(block: cst.BaseSuite) -> list[cst.BaseSmallStatement] | None:
    """The loop body's statements when all are simple ones (no nested blocks)."""
    out = []
    body = block.body if isinstance(block, cst.IndentedBlock) else [block]
    for line in body:
        if isinstance(line, cst.SimpleStatementLine):
            out.extend(line.body)
        elif isinstance(line, cst.SimpleStatementSuite):
            out.extend(line.body)
        else:
            return None
    return out
