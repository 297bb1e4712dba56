"""Statement edits: replacing nodes inside a statement by identity, inserting a statement before
another or at the top of a body, and removing one with the block's blank lines kept tidy."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.codemods._lookups import is_docstring, is_inside

if TYPE_CHECKING:
    from jaxfuse_lint.model import SemanticModel


class _IdentityReplacer(cst.CSTTransformer):
    def __init__(self, mapping: dict[cst.CSTNode, object]) -> None:
        super().__init__()
        self.mapping = mapping

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        return self.mapping.get(original_node, updated_node)


def replace_within(node: cst.CSTNode, mapping: dict[cst.CSTNode, object]) -> cst.CSTNode:
    """`node` with descendants (by identity) replaced; the plan's other targets stay untouched."""
    if not mapping:
        return node
    return node.visit(_IdentityReplacer(mapping))


def simple_statement(expr_stmt: cst.BaseSmallStatement) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([expr_stmt])


def assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return simple_statement(cst.Assign([cst.AssignTarget(cst.Name(name))], value))


def insert_before(first: cst.BaseStatement, *new_stmts: cst.BaseStatement) -> cst.FlattenSentinel:
    """`new_stmts` then `first`; a `def`/`class` that now follows a statement gets its blank line (PEP 8)."""
    if isinstance(first, (cst.FunctionDef, cst.ClassDef)) and not (
            first.leading_lines and first.leading_lines[0].comment is None):
        first = first.with_changes(leading_lines=[cst.EmptyLine(indent=False), *first.leading_lines])
    return cst.FlattenSentinel([*new_stmts, first])


def top_of_body(fn_node: cst.FunctionDef) -> cst.BaseStatement | None:
    """The statement a new first statement goes before (after a docstring)."""
    block = fn_node.body
    if not isinstance(block, cst.IndentedBlock) or not block.body:
        return None
    if is_docstring(block.body[0]):
        return block.body[1] if len(block.body) > 1 else None
    return block.body[0]


def remove_statement(model: "SemanticModel", stmt: cst.BaseStatement, replacements: dict) -> bool:
    """Add the removal of `stmt` to `replacements`, keeping the block's blank-line layout tidy.

    The statement after it loses its leading blank lines when `stmt` opened the block (after a
    docstring it keeps one), or inherits `stmt`'s blank line otherwise; replacements already planned inside that next
    statement are folded into its new version. False (nothing added) when `stmt` is the last
    statement of its block (the block must not become empty) or its successor is a target itself.
    """
    block = model.parent(stmt)
    if not isinstance(block, (cst.IndentedBlock, cst.Module)):
        return False
    stmts = list(block.body)
    i = stmts.index(stmt)
    if i + 1 >= len(stmts):
        return False
    nxt = stmts[i + 1]
    if nxt in replacements:
        return False
    lines = list(nxt.leading_lines)
    if i == 0:
        while lines and lines[0].comment is None:
            lines.pop(0)
    elif not (lines and lines[0].comment is None):
        lines = [ln for ln in stmt.leading_lines if ln.comment is None][:1] + lines
    inner = {k: v for k, v in replacements.items() if k is not nxt and is_inside(model, k, nxt)}
    new_next = replace_within(nxt, inner) if inner else nxt
    for k in inner:
        del replacements[k]
    replacements[nxt] = new_next.with_changes(leading_lines=lines)
    replacements[stmt] = cst.RemoveFromParent()
    return True
